/*
 * The completion epochs' bounds (core/epochs.hpp), in one place readable
 * from C: the library's constants are defined from these, and the tests
 * and the benchmark that check the bounds include this header (with src/
 * on their include path) instead of repeating the numbers.
 */
#ifndef T4A_CORE_EPOCH_LIMITS_H
#define T4A_CORE_EPOCH_LIMITS_H

/* Keepalives the open epoch holds at most; a full one is sealed. */
#define T4A_OPEN_EPOCH_LIMIT 256

#endif
