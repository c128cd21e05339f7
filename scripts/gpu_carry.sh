#!/usr/bin/env bash
# Copies what the GPU machine lacks (see DESIGN.md section 7) into the
# git-ignored folder .carry: headers into .carry/include (CMake searches it
# last), and libcurl with its dependencies into .carry/lib-curl (used only
# when that machine has no libcurl.so.4 of its own). Run here, then pass
# ".carry" in the device tool's carry list.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .carry/include .carry/lib-curl
cp /usr/include/xxhash.h .carry/include/
rm -rf .carry/include/curl
cp -r /usr/include/x86_64-linux-gnu/curl .carry/include/curl
cp -L /usr/lib/x86_64-linux-gnu/libcurl.so.4 .carry/lib-curl/libcurl.so.4
ldd /usr/lib/x86_64-linux-gnu/libcurl.so.4 | awk '$3 ~ /^\// {print $3}' | grep -vE '/(libc|libm|libresolv|libpthread|libdl)\.so' |
  while read -r lib; do cp -L "$lib" .carry/lib-curl/; done
echo "carried: $(ls .carry/include) | lib-curl: $(ls .carry/lib-curl | wc -l) files, $(du -sh .carry/lib-curl | cut -f1)"
