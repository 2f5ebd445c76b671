/* libgenie: symbol export macro. Plain C, no build flags needed by consumers. */
#ifndef GENIE_EXPORT_H
#define GENIE_EXPORT_H

/* GENIE_API marks a symbol that is part of the public ABI. The library is
 * compiled with hidden visibility, so everything else stays internal.
 * GENIE_BUILDING_LIBRARY is defined only while compiling libgenie itself. */
#if defined(_WIN32)
#  if defined(GENIE_BUILDING_LIBRARY)
#    define GENIE_API __declspec(dllexport)
#  elif defined(GENIE_STATIC)
#    define GENIE_API
#  else
#    define GENIE_API __declspec(dllimport)
#  endif
#else
#  define GENIE_API __attribute__((visibility("default")))
#endif

#endif /* GENIE_EXPORT_H */
