# Egress beyond HTTP (issue 28), sourced by tests/sandbox/test-sandbox: the
# SOCKS5 proxy, ALL_PROXY, git over ssh through `husk connect`, pip and npm
# through the proxies, all with no proxy flag of their own. In a network and
# mount namespace made here: /etc/hosts maps the test's names to 127.0.0.2
# (allowed with --allow-host-loopback), an sshd, an HTTP server, a package
# index and an npm registry listen there; /etc/ssh/ssh_config names the test's
# key and known hosts (the user's ~/.ssh is hidden in a sandbox).
E=$WORK/egress-$$
PY=/usr/bin/python3
if ! command -v curl >/dev/null || ! command -v git >/dev/null || [ ! -x /usr/sbin/sshd ] || [ ! -x $PY ]; then
  skip "egress: curl, git, openssh-server and python3 are needed (scripts/setup installs openssh-server)"
else
mkdir -p "$E/proj/keys" "$E/srv" "$E/pypi/simple/eg-tiny" "$E/www" "$E/repo" "$E/dep" "$E/pyrepo"
echo "served by the test" >"$E/www/index.html"
cat >"$E/hosts" <<HOSTS
127.0.0.1 localhost
127.0.0.2 allowed.test other.test git.test pypi.test npm.test
HOSTS
ssh-keygen -q -t ed25519 -N '' -f "$E/proj/keys/id" -C egress-test
ssh-keygen -q -t ed25519 -N '' -f "$E/srv/host_key" -C egress-host
{ printf '[git.test]:2222 '; cat "$E/srv/host_key.pub"; printf '[other.test]:2222 '; cat "$E/srv/host_key.pub"; } \
  >"$E/proj/keys/known_hosts"
cat >"$E/ssh_config" <<CONF
Host *
  IdentityFile $E/proj/keys/id
  IdentitiesOnly yes
  UserKnownHostsFile $E/proj/keys/known_hosts
  StrictHostKeyChecking yes
  BatchMode yes
CONF
cat >"$E/sshd_config" <<CONF
ListenAddress 127.0.0.2:2222
HostKey $E/srv/host_key
AuthorizedKeysFile $E/proj/keys/id.pub
AllowUsers $SB_USER
StrictModes no
UsePAM yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PidFile none
CONF
# Bare repositories: one to clone, an npm dependency and a pip one (git+ssh).
for r in repo dep pyrepo; do
  git init -q --bare "$E/$r/$r.git"
  git init -q "$E/$r/work"
  case $r in
    repo) echo "cloned over ssh" >"$E/$r/work/README" ;;
    dep) printf '{"name": "eg-dep", "version": "1.0.0", "main": "index.js"}\n' >"$E/$r/work/package.json"
      echo "exports.value = 'eg-dep over ssh';" >"$E/$r/work/index.js" ;;
    pyrepo) printf 'from setuptools import setup\nsetup(name="eg-git", version="1.0", py_modules=["eg_git"])\n' \
      >"$E/$r/work/setup.py"
      echo "VALUE = 'eg-git over ssh'" >"$E/$r/work/eg_git.py" ;;
  esac
  git -C "$E/$r/work" add -A && git -C "$E/$r/work" -c user.name=t -c user.email=t@t commit -q -m one &&
    git -C "$E/$r/work" push -q "$E/$r/$r.git" HEAD:refs/heads/main && git -C "$E/$r/$r.git" symbolic-ref HEAD refs/heads/main
done
# A wheel made by hand and a PEP 503 index for it.
$PY - "$E/pypi" <<'WHEEL'
import base64, hashlib, sys, zipfile
root = sys.argv[1]
name = "eg_tiny-1.0-py3-none-any.whl"
files = {"eg_tiny/__init__.py": "VALUE = 'eg-tiny from the local index'\n",
         "eg_tiny-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: eg-tiny\nVersion: 1.0\n",
         "eg_tiny-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
record = "".join(f"{p},sha256={base64.urlsafe_b64encode(hashlib.sha256(t.encode()).digest()).rstrip(b'=').decode()},{len(t)}\n"
                 for p, t in files.items()) + "eg_tiny-1.0.dist-info/RECORD,,\n"
files["eg_tiny-1.0.dist-info/RECORD"] = record
with zipfile.ZipFile(f"{root}/simple/eg-tiny/{name}", "w") as z:
    for p, t in files.items():
        z.writestr(p, t)
digest = hashlib.sha256(open(f"{root}/simple/eg-tiny/{name}", "rb").read()).hexdigest()
open(f"{root}/simple/eg-tiny/index.html", "w").write(f'<a href="{name}#sha256={digest}">{name}</a>\n')
open(f"{root}/simple/index.html", "w").write('<a href="eg-tiny/">eg-tiny</a>\n')
WHEEL
printf '{"name": "eg-app", "version": "1.0.0", "dependencies": {"eg-tiny": "1.0.0", "eg-dep": "git+ssh://git.test:2222%s"}}\n' \
  "$E/dep/dep.git" >"$E/proj/package.json"
cp "$husk" "$HOME_DIR/husk-egress"
chown -R "$U:$G" "$E/proj" "$E/repo" "$E/dep" "$E/pyrepo" "$HOME_DIR/husk-egress"
chmod 600 "$E/proj/keys/id"
chmod 755 "$E"

cat >"$E/run.sh" <<'CHECK'
#!/bin/bash
# In the test's namespaces, as root: the servers, then each sandbox as the user.
husk=$1; shift
busybox ip link set lo up
mount --bind "$E/hosts" /etc/hosts
mount --bind "$E/ssh_config" /etc/ssh/ssh_config
mount -t tmpfs -o mode=755 tmpfs /run && mkdir -m 755 /run/sshd
/usr/sbin/sshd -D -f "$E/sshd_config" -E "$E/sshd.log" & s=$!
busybox httpd -f -p 127.0.0.2:8080 -h "$E/www" & h=$!
$PY -m http.server 8081 --bind 127.0.0.2 --directory "$E/pypi" >/dev/null 2>&1 & p=$!
$PY "$REGISTRY" 127.0.0.2 8082 npm.test "$E/npm.ready" & n=$!
for port in 2222 8080 8081; do
  for _ in $(seq 100); do bash -c "exec 3<>/dev/tcp/127.0.0.2/$port" 2>/dev/null && break; sleep 0.1; done
done
for _ in $(seq 100); do [ -e "$E/npm.ready" ] && break; sleep 0.1; done
cd "$E/proj" || exit 1
lo=--allow-host-loopback
echo "== socks"
"$@" "$husk" sandbox --allow-host allowed.test:8080 $lo -- bash -c '
  curl -s --max-time 20 --socks5-hostname 127.0.0.1:1080 http://allowed.test:8080/; echo "socks: $?"
  env -u http_proxy -u HTTP_PROXY curl -s --max-time 20 http://allowed.test:8080/; echo "ALL_PROXY alone: $?"
  curl -s --max-time 20 --socks5-hostname 127.0.0.1:1080 http://other.test:8080/; echo "other name: $?"
  # Raw replies: the greeting and a request sent at once; BIND and UDP
  # ASSOCIATE get 07, a client without method 0 gets ff, a name with a NUL
  # in it (allowed.test for a resolver that stops there) 01.
  raw() { exec 3<>/dev/tcp/127.0.0.1/1080; printf "$2" >&3; echo "$1: $(timeout 10 head -c $3 <&3 | od -An -tx1 | tr -d " \n")"; exec 3>&-; }
  raw bind "\x05\x01\x00\x05\x02\x00\x03\x0callowed.test\x1f\x90" 12
  raw udp "\x05\x01\x00\x05\x03\x00\x01\x00\x00\x00\x00\x00\x35" 12
  raw password "\x05\x01\x02" 2
  raw nul "\x05\x01\x00\x05\x01\x00\x03\x0eallowed.test\x00x\x1f\x90" 12' 2>&1
echo "== git"
# husk run from the user's home, which the sandbox hides: ssh reaches the
# copy bound at /run/husk/husk.
"$@" "$HOME_DIR/husk-egress" sandbox --allow-host git.test:2222 $lo -- bash -c '
  test -e "$1" && echo "husk visible at its own path"
  git clone -q "ssh://git.test:2222$0/repo/repo.git" c1 2>&1 && cat c1/README
  git clone -q "ssh://other.test:2222$0/repo/repo.git" c2 2>&1; echo "other name: $?"' "$E" "$HOME_DIR/husk-egress" 2>&1
echo "== pip"
# Debian's setuptools builds the git one: the index has none (--no-build-isolation).
"$@" "$husk" sandbox --allow-host pypi.test:8081 --allow-host git.test:2222 $lo -- bash -c '
  python3 -m pip install -q --no-cache-dir --disable-pip-version-check --index-url http://pypi.test:8081/simple/ \
    --trusted-host pypi.test --no-build-isolation --target pipdir eg-tiny "eg-git @ git+ssh://git.test:2222$0/pyrepo/pyrepo.git" \
    2>&1 && PYTHONPATH=pipdir python3 -c "import eg_tiny, eg_git; print(eg_tiny.VALUE + \", \" + eg_git.VALUE)"' "$E" 2>&1
echo "== clients"
# The JVM from JAVA_TOOL_OPTIONS (it says so on stderr), wget from
# http_proxy, httpx from them all (a socks5h:// ALL_PROXY made it refuse to
# make any client).
"$@" "$husk" sandbox --allow-host allowed.test:8080 $lo -- bash -c '
  if command -v java >/dev/null; then
    printf "%s\n" "public class Fetch { public static void main(String[] a) throws Exception {" \
      "System.out.print(\"java: \" + new String(new java.net.URL(a[0]).openStream().readAllBytes())); } }" >Fetch.java
    java Fetch.java http://allowed.test:8080/ 2>/dev/null || echo "java: failed"
  fi
  ! command -v wget >/dev/null || wget -q -O- http://allowed.test:8080/ | sed "s/^/wget: /"
  ! python3 -c "import httpx" 2>/dev/null ||
    python3 -c "import httpx; print(\"httpx: \" + httpx.get(\"http://allowed.test:8080/\").text, end=\"\")" 2>&1' 2>&1
if command -v npm >/dev/null; then
  echo "== npm"
  "$@" "$husk" sandbox --allow-host npm.test:8082 --allow-host git.test:2222 $lo -- bash -c '
    npm install --registry http://npm.test:8082/ --no-audit --no-fund --loglevel=error >/dev/null 2>npm.err ||
      cat npm.err
    node -e "console.log(require(\"eg-tiny\").value + \", \" + require(\"eg-dep\").value)"' 2>&1
fi
kill $s $h $p $n
CHECK
chmod +x "$E/run.sh"
EOUT=$(E=$E PY=$PY HOME_DIR=$HOME_DIR REGISTRY=$repo/tests/sandbox/checks/npm-registry.py unshare --net --mount "$E/run.sh" "$husk" "${AS_USER[@]}" 2>&1)
section() { awk -v s="== $1" '$0 == s { on = 1; next } /^== / { on = 0 } on' <<<"$EOUT"; }

OUT=$(section socks)
if [[ "$OUT" == *"served by the test"$'\n'"socks: 0"* ]] && [[ "$OUT" == *"served by the test"$'\n'"ALL_PROXY alone: 0"* ]] &&
   [[ "$OUT" == *"other name: 97"* ]] && [[ "$OUT" == *"--allow-host refused: other.test:8080 (1)"* ]] &&
   [[ "$OUT" == *"bind: 050005070001000000000000"* ]] && [[ "$OUT" == *"udp: 050005070001000000000000"* ]] &&
   [[ "$OUT" == *"password: 05ff"* ]] && [[ "$OUT" == *"nul: 050005010001000000000000"* ]]; then
  pass "egress: SOCKS5 (curl --socks5-hostname) and ALL_PROXY alone reach an allowed name; another name is refused and listed; BIND, UDP ASSOCIATE, other methods and a NUL in a name refused"
else
  fail "egress: SOCKS5 to an allowed name, another refused" "served twice, other name: 97, listed at exit, 07 for BIND/UDP, ff" "$OUT"
fi
OUT=$(section git)
if [[ "$OUT" == *"cloned over ssh"* ]] && [[ "$OUT" != *"husk visible at its own path"* ]] &&
   [[ "$OUT" == *"husk connect: other.test:2222: refused by the sandbox's proxy (not an allowed host)"* ]] &&
   [[ "$OUT" == *"other name: 128"* ]] && [[ "$OUT" == *"--allow-host refused: other.test:2222 (1)"* ]]; then
  pass "egress: git clone over ssh (GIT_SSH_COMMAND, husk connect, husk from a hidden home) from an allowed name; another name refused in one line"
else
  fail "egress: git clone over ssh" "cloned over ssh; husk connect's refusal of other.test; git exit 128" "$OUT"
fi
OUT=$(section pip)
if ! $PY -m pip --version >/dev/null 2>&1; then
  skip "egress: pip install: Debian's python3-pip is not installed (scripts/setup installs it)"
else [ "$OUT" = "eg-tiny from the local index, eg-git over ssh" ] &&
  pass "egress: pip install from a local index and a git+ssh requirement through the proxies, no proxy flag" ||
  fail "egress: pip install through the proxies" "eg-tiny from the local index, eg-git over ssh" "$OUT"; fi
OUT=$(section clients)
want=$(! command -v java >/dev/null || echo "java: served by the test"; ! command -v wget >/dev/null || echo "wget: served by the test"
  ! $PY -c "import httpx" 2>/dev/null || echo "httpx: served by the test")
if [ -z "$want" ]; then
  skip "egress: the JVM, wget and httpx: none is installed"
else [ "$OUT" = "$want" ] && pass "egress: the JVM (JAVA_TOOL_OPTIONS), wget and httpx reach an allowed name with no proxy flag" ||
  fail "egress: the JVM, wget and httpx through the proxy" "$want" "$OUT"; fi
if ! command -v npm >/dev/null; then
  skip "egress: npm install: npm is not installed"
else
  OUT=$(section npm)
  # The exit summary says that ~/.npm (its cache) was discarded.
  [ "$(grep -v '^husk sandbox: what the command wrote in the scratch home' <<<"$OUT")" = \
    "eg-tiny from the local registry, eg-dep over ssh" ] &&
    pass "egress: npm install from a local registry and a git+ssh dependency through the proxies, no proxy flag" ||
    fail "egress: npm install through the proxies" "eg-tiny from the local registry, eg-dep over ssh" "$OUT"
fi
rm -rf "$E" "$HOME_DIR/husk-egress"
fi
