/* arena: many buffers carved from one block by code that runs twice: first
 * without a block, only adding up the bytes (the memory estimate), then
 * over the block allocated for that total. The estimate and the
 * allocations are then one list and cannot disagree.
 *
 * Under AddressSanitizer each buffer is followed by a poisoned red zone, so
 * a write past one buffer into the next is still caught, as it would be
 * between separate allocations. */
#ifndef TFM_ARENA_H
#define TFM_ARENA_H

#include <stddef.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
enum { ARENA_RED_ZONE = 64 };
#else
enum { ARENA_RED_ZONE = 0 };
#endif

typedef struct {
    char *base;         /* NULL while counting: every buffer is then NULL */
    size_t used;        /* bytes carved so far, each buffer rounded to 64 */
    double need;        /* the same in double: an absurd request cannot wrap */
} Arena;

/* count elements of size bytes, 64-byte aligned if base is (zeroed if the
 * block is). */
static inline void *arena_take(Arena *a, size_t count, size_t size)
{
    const size_t bytes = count * size, span = ((bytes + 63) & ~(size_t)63) + ARENA_RED_ZONE;
    char *p = a->base ? a->base + a->used : NULL;
#if defined(__SANITIZE_ADDRESS__)
    if (p) ASAN_POISON_MEMORY_REGION(p + bytes, span - bytes);
#endif
    a->used += span;
    a->need += (double)count * (double)size + 63 + ARENA_RED_ZONE;
    return p;
}

#endif
