/* arena: many buffers carved from one block by code that runs twice: first
 * without a block, only adding up the bytes (the memory estimate), then
 * over the block allocated for that total. The estimate and the
 * allocations are then one list and cannot disagree. */
#ifndef TFM_ARENA_H
#define TFM_ARENA_H

#include <stddef.h>

typedef struct {
    char *base;         /* NULL while counting: every buffer is then NULL */
    size_t used;        /* bytes carved so far, each buffer rounded to 64 */
    double need;        /* the same in double: an absurd request cannot wrap */
} Arena;

/* count elements of size bytes, 64-byte aligned (zeroed if the block is). */
static inline void *arena_take(Arena *a, size_t count, size_t size)
{
    void *p = a->base ? a->base + a->used : NULL;
    a->used += (count * size + 63) & ~(size_t)63;
    a->need += (double)count * (double)size + 63;
    return p;
}

#endif
