// A file built into the binary at build time, so an installed program needs
// no second file beside it (the pilot program, the base seccomp profile).
//
//   IDLEGRID_EMBED_FILE(name, "path")  at namespace scope, once per file;
//   IDLEGRID_EMBEDDED(name)            its bytes, as a std::string_view.
//
// The path is a string literal the build defines (absolute, no quotes in it).
#pragma once

#include <cstddef>
#include <string_view>

#define IDLEGRID_EMBED_FILE(name, path)                  \
  asm(".section .rodata\n"                               \
      ".balign 16\n"                                     \
      ".global idlegrid_embed_" #name                    \
      "_start\n"                                         \
      "idlegrid_embed_" #name                            \
      "_start:\n"                                        \
      ".incbin \"" path                                  \
      "\"\n"                                             \
      ".global idlegrid_embed_" #name                    \
      "_end\n"                                           \
      "idlegrid_embed_" #name                            \
      "_end:\n"                                          \
      ".previous\n");                                    \
  extern "C" const char idlegrid_embed_##name##_start[]; \
  extern "C" const char idlegrid_embed_##name##_end[]

#define IDLEGRID_EMBEDDED(name)                   \
  std::string_view(idlegrid_embed_##name##_start, \
                   static_cast<std::size_t>(idlegrid_embed_##name##_end - idlegrid_embed_##name##_start))
