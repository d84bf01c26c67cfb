// Which sanitizer this unit is compiled under, asked the same way of GCC
// (__SANITIZE_ADDRESS__, __SANITIZE_THREAD__) and of clang (__has_feature),
// which defines neither macro: NDGC_ASAN and NDGC_TSAN are 1 or 0.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define NDGC_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NDGC_ASAN 1
#endif
#endif
#ifndef NDGC_ASAN
#define NDGC_ASAN 0
#endif

#if defined(__SANITIZE_THREAD__)
#define NDGC_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define NDGC_TSAN 1
#endif
#endif
#ifndef NDGC_TSAN
#define NDGC_TSAN 0
#endif
