# Sourced by scripts/install.sh and scripts/install-rust.sh, which check what they download the
# same way:
#   sha256_tool    sets the array `sha256` to the SHA-256 program (sha256sum on Linux, shasum
#                  on macOS), or fails (status 1) when there is none
#   sha256_of F    prints the SHA-256 of file F in lower-case hex

sha256_tool() {
  if command -v sha256sum > /dev/null 2>&1; then
    sha256=(sha256sum)
  elif command -v shasum > /dev/null 2>&1; then
    sha256=(shasum -a 256)
  else
    return 1
  fi
}

sha256_of() {
  "${sha256[@]}" "$1" | awk '{ print tolower($1) }'
}
