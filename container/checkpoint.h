// `checkpoint` and `restore` (runc's verbs, through CRIU: checkpoint/).
#pragma once

#include <string>

#include "checkpoint/plan.h"
#include "container/context.h"
#include "spec/spec.h"

namespace husk::rt {

// Dumps a running container into --image-path; unless --leave-running or
// --pre-dump it is gone afterwards, as after delete.
int cmd_checkpoint(const Context& g, const std::string& id, const ckpt::CheckpointFlags& f);
// A new container `id` from an image and a bundle: running once it returns
// (--detach), else waited for as run waits, then deleted. Its exit status.
int cmd_restore(const Context& g, const std::string& id, const ckpt::RestoreFlags& f);
// Throws, naming what is missing, for a container CRIU cannot take here.
void check_checkpointable(const spec::Spec& spec, const Context& g, const std::string& verb);

}  // namespace husk::rt
