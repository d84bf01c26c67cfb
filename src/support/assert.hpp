// NDGC_ASSERT(condition, message): a check of an invariant that the code
// around it relies on, in debug builds only.
//
// Compiled in when NDEBUG is not defined (the Debug builds of the sanitizer
// phases of tools/test) or when NDGC_ASSERTIONS is defined; otherwise it
// evaluates nothing, so it may sit on a hot path. A failed check prints the
// file, line, condition and message to stderr and aborts: an invariant that
// does not hold is a bug in ndgc, never an error a caller can handle (those
// throw, docs/design.md §9).
#pragma once

#if !defined(NDEBUG) || defined(NDGC_ASSERTIONS)
#define NDGC_ASSERTIONS_ON 1
#else
#define NDGC_ASSERTIONS_ON 0
#endif

namespace ndgc::support {
[[noreturn]] void assertion_failed(const char* file, int line, const char* condition, const char* message) noexcept;
}  // namespace ndgc::support

#if NDGC_ASSERTIONS_ON
#define NDGC_ASSERT(condition, message)                                                      \
  ((condition) ? static_cast<void>(0)                                                        \
               : ::ndgc::support::assertion_failed(__FILE__, __LINE__, #condition, message))
#else
#define NDGC_ASSERT(condition, message) static_cast<void>(sizeof(static_cast<bool>(condition)))
#endif
