/* fixed_batch.h: the tiny models' test batch (test_model.c, test_rdrop.c):
 * 3 sentences of a 20-token vocabulary, with padding. */
#ifndef TFM_TEST_FIXED_BATCH_H
#define TFM_TEST_FIXED_BATCH_H

#include "model/model.h"

/* Every src ends in </s>, tgt_in starts with <s>. */
enum { BN = 3, BS = 6, BT = 5 };
static const int b_src[BN * BS] = {
    5, 6, 7, 8, 9, TOK_EOS,
    10, 11, TOK_EOS, TOK_PAD, TOK_PAD, TOK_PAD,
    12, 13, 14, 15, TOK_EOS, TOK_PAD,
};
static const int b_tgt_in[BN * BT] = {
    TOK_BOS, 16, 17, 18, 19,
    TOK_BOS, 4, TOK_PAD, TOK_PAD, TOK_PAD,
    TOK_BOS, 9, 8, 7, TOK_PAD,
};
static const int b_tgt_out[BN * BT] = {
    16, 17, 18, 19, TOK_EOS,
    4, TOK_EOS, TOK_PAD, TOK_PAD, TOK_PAD,
    9, 8, 7, TOK_EOS, TOK_PAD,
};

/* The three sentences above as a batch. */
static inline Batch fixed_batch(void)
{
    return (Batch){.n = BN, .src_len = BS, .tgt_len = BT, .src = b_src, .tgt_in = b_tgt_in,
                   .tgt_out = b_tgt_out};
}

#endif
