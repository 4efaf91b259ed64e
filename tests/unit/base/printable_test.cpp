// base::printable: file names the sandboxed command chose, safe to print.
#include <catch2/catch.hpp>
#include <string>

#include "base/printable.h"

using husk::base::printable;

TEST_CASE("printable leaves plain names and valid UTF-8 as they are") {
  CHECK(printable("notes.txt") == "notes.txt");
  CHECK(printable("dir/with space~") == "dir/with space~");
  CHECK(printable("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80") == "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
  CHECK(printable("") == "");
}

TEST_CASE("printable escapes control bytes, DEL and the C1 controls") {
  // What the red team wrote: erase the line, move up, set the window title.
  CHECK(printable("\x1b[2K\x1b[1A\x1b]0;x\x07") == "\\x1b[2K\\x1b[1A\\x1b]0;x\\x07");
  CHECK(printable("a\nb\rc\td") == "a\\x0ab\\x0dc\\x09d");
  CHECK(printable(std::string("nul\0x", 5)) == "nul\\x00x");
  CHECK(printable("\x7f") == "\\x7f");
  // U+009B, the 8-bit CSI, encoded in UTF-8; U+00A0 is printable.
  CHECK(printable("\xc2\x9b" "31m") == "\\xc2\\x9b31m");
  CHECK(printable("\xc2\xa0") == "\xc2\xa0");
}

TEST_CASE("printable escapes each byte that is not valid UTF-8") {
  CHECK(printable("\xff\xfe") == "\\xff\\xfe");
  CHECK(printable("\xc3") == "\\xc3");                  // cut short at the end
  CHECK(printable("\xc3(") == "\\xc3(");                // not a continuation byte
  CHECK(printable("\xc0\xaf") == "\\xc0\\xaf");         // overlong "/"
  CHECK(printable("\xe0\x80\xaf") == "\\xe0\\x80\\xaf");  // overlong, three bytes
  CHECK(printable("\xed\xa0\x80") == "\\xed\\xa0\\x80");  // a surrogate
  CHECK(printable("\xf4\x90\x80\x80") == "\\xf4\\x90\\x80\\x80");  // past U+10FFFF
  CHECK(printable("\x80z") == "\\x80z");                // a lone continuation byte
}
