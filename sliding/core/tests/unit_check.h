/*
 * unit_check.h -- what the C unit tests of the sliding core and runtime share
 * (test_slide_core.c, and sliding/runtime/tests/): a check that counts and
 * reports the first 30 failures, a seeded random generator (splitmix64: the
 * same numbers on every machine) and an allocation that ends the test when
 * memory runs out. Each test prints "checks failures" and exits non-zero on a
 * failure.
 */
#ifndef SLIDING_UNIT_CHECK_H
#define SLIDING_UNIT_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static long checks, failures;

#define CHECK(cond, ...)                                                     \
    do {                                                                     \
        checks++;                                                            \
        if (!(cond)) {                                                       \
            failures++;                                                      \
            if (failures <= 30) {                                            \
                fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__,       \
                        __LINE__, #cond);                                    \
                fprintf(stderr, __VA_ARGS__);                                \
                fputc('\n', stderr);                                         \
            }                                                                \
        }                                                                    \
    } while (0)

static uint64_t rng_state = 38;

static inline uint64_t rng_next(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static inline void *alloc_or_die(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "out of memory (%zu bytes)\n", bytes);
        exit(2);
    }
    return p;
}

#endif
