/* model: the Transformer encoder-decoder of "Attention Is All You Need",
 * forward and hand-written backward over one batch.
 *
 * Layout. All parameters live in one float array `params` (and gradients in
 * `grads`, same layout), carved into named row-major tensors listed in
 * `tensors` with stable names (e.g. "enc.0.self.wq", "dec.1.cross.wo",
 * "emb.shared"). Weights are (out, in) as in PyTorch. The full order (fixed:
 * the PyTorch reference and checkpoints rely on it) is built by params.c
 * (build_layout); q/k/v weights of a layer are contiguous so one (3D, D) gemm
 * projects all three (cross-attention: k/v as one (2D, D) block).
 * Activations live in a workspace sized once by model_alloc_training for the
 * largest batch. The kernels (layers.h) are reusable for incremental decoding:
 * the input of position t is emb[tok]·sqrt(d_model) + pos_table[t] (then,
 * per layer, the same sublayers; LayerNorm eps 1e-5), the logits are
 * h·out_projᵀ (no bias). A layer's "self.wq" tensor starts its (3D, D) q/k/v
 * block, "cross.wk" the (2D, D) k/v block; biases likewise.
 *
 * Tokens: ids < cfg.vocab_size; TOK_PAD marks padding in every (n, len) array.
 *
 * Usage:
 *     Model m; model_init(&m, &cfg, err); model_init_weights(&m, &rng);
 *     model_alloc_training(&m, max_tokens, max_len, err);
 *     model_forward(&m, &batch, 0.1f, &dropout_rng, &stats, err);
 *     model_backward(&m);   // grads of stats.loss / stats.n_tokens
 */
#ifndef TFM_MODEL_H
#define TFM_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include "model/config.h"
#include "base/err.h"
#include "base/rng.h"
#include "text/bpe.h"     /* TOK_PAD, TOK_BOS, TOK_EOS: the vocabulary's special ids */

typedef struct {
    int n;              /* sentences */
    int src_len;        /* columns of src */
    int tgt_len;        /* columns of tgt_in and tgt_out */
    const int *src;     /* (n, src_len): tokens + TOK_EOS, then TOK_PAD */
    const int *tgt_in;  /* (n, tgt_len): TOK_BOS + tokens, then TOK_PAD */
    const int *tgt_out; /* (n, tgt_len): tokens + TOK_EOS, then TOK_PAD */
    /* The non-pad targets the loss is averaged over; 0: this batch's own.
     * A rank's slice of a global batch gives the global count, so the
     * ranks' gradients add up to the whole batch's. */
    long loss_tokens;
} Batch;

/* What a tensor is, set by the layout (params.c): the one rule for how it
 * starts (model_init_weights) and whether weight decay's "matrices" scope
 * spares it (tensor_is_vector). */
typedef enum { TENSOR_EMBEDDING, TENSOR_MATRIX, TENSOR_GAIN, TENSOR_BIAS } TensorKind;

typedef struct {
    char name[48];
    size_t offset;      /* into params/grads, in floats */
    int rows, cols;     /* a vector has rows == 1 */
    TensorKind kind;
} TensorInfo;

/* A norm's gain or a bias: no weight decay under train.weight_decay_scope
 * "matrices". */
static inline bool tensor_is_vector(const TensorInfo *t)
{
    return t->kind == TENSOR_GAIN || t->kind == TENSOR_BIAS;
}

typedef struct {
    double loss;        /* label-smoothed cross-entropy, summed over non-pad targets */
    double nll;         /* negative log-likelihood, summed likewise */
    long n_tokens;      /* non-pad target tokens */
    long n_correct;     /* of those, how many are the argmax of their logits
                           (teacher-forced token accuracy) */
} LossStats;

typedef struct ModelWork ModelWork;   /* activations and scratch, private */
typedef struct ModelLayout ModelLayout; /* per-layer parameter offsets, private */

typedef struct {
    ModelConfig cfg;
    float *params;
    float *grads;       /* NULL until model_alloc_training */
    size_t n_params;
    TensorInfo *tensors;
    int n_tensors;
    ModelWork *work;    /* NULL until model_alloc_training */
    ModelLayout *layout;
    float *pos_table;   /* (cfg.max_len, d_model) sinusoidal positions */
    /* Views into params, set by model_init: the embedding of source tokens,
     * of target tokens, and the output projection (V, D); all three are the
     * same matrix when cfg.share_embeddings. */
    const float *emb_src, *emb_tgt, *out_proj;
    /* The output vocabulary (model_set_output_vocab): the logits are those
     * of out_ids[0..n_out), ascending; out_pos[id] is id's column, or -1.
     * NULL / 0 when every piece is an output (model.output_vocab "all"). */
    int *out_ids, *out_pos;
    int n_out;
    /* A replica (model_init_replica): params, tensors, layout, pos_table and
     * the output vocabulary are another model's, read here and freed there. */
    bool replica;
    /* int8 (model_quantize, or an int8 model file): every matrix holds its
     * int8 values times its rows' scales, and inference packs its products
     * in int8 (nn/packed_int8.h). */
    bool int8;
    /* model_release_matrices: the products' float weights are gone. */
    bool matrices_released;
} Model;

/* Builds the tensor table and allocates params (zeroed). cfg must be valid
 * (vocab_size and max_len set). */
TfmStatus model_init(Model *m, const ModelConfig *cfg, TfmErr *err);

/* Restricts the output layer to the pieces ids[0..n) (model.output_vocab
 * "target"): ascending, in range, and holding the specials, the byte pieces
 * and the marker, so that any text can still be written (bpe_subset.h).
 * The logits, the loss and its label smoothing, and decoding then cover
 * only these pieces; the others' embedding rows still embed the source.
 * Call before model_alloc_training. Errors: TFM_ERR_FORMAT (a bad list,
 * or cfg.output_vocab is "all"), TFM_ERR_NOMEM. */
TfmStatus model_set_output_vocab(Model *m, const int *ids, int n, TfmErr *err);

/* The number of output columns: n_out, or cfg.vocab_size when unrestricted. */
static inline int model_n_out(const Model *m) { return m->out_ids ? m->n_out : m->cfg.vocab_size; }

/* Copies the output projection's rows of the output vocabulary to dst
 * (model_n_out x d_model), in column order. */
void model_gather_output(const Model *m, float *dst);

/* Xavier-uniform projections, N(0, d^-1/2) embeddings, LayerNorm gain 1 bias 0. */
void model_init_weights(Model *m, Rng *rng);

/* Allocates grads and the activation workspace for any batch with
 * n * src_len <= max_tokens, n * tgt_len <= max_tokens, lengths <= max_len. */
TfmStatus model_alloc_training(Model *m, int max_tokens, int max_len, TfmErr *err);

/* A replica of m for training on a share of a batch in another thread: it
 * reads m's parameters (the same memory, so m's updates are its own) and
 * has its own gradients and a workspace for batches of max_tokens, max_len
 * (model_alloc_training). Free it with model_free, before m. */
TfmStatus model_init_replica(Model *r, const Model *m, int max_tokens, int max_len,
                             TfmErr *err);

/* Bytes model_alloc_training(max_tokens, max_len) allocates for the
 * activation workspace of a model of shape cfg (vocab_size and max_len set);
 * grads not included. No allocation; +inf when the sizes overflow. */
double model_work_bytes(const ModelConfig *cfg, int max_tokens, int max_len);

/* What a training step asks of the forward pass besides the batch: the
 * trainer's settings, not the model's. */
typedef struct {
    float label_smoothing;
    /* the dropouts are cfg's four probabilities times this (1: all of them;
     * lower early in a run, train.dropout_warmup) */
    float dropout_factor;
    /* R-Drop (train.rdrop; 0: off): when > 0, a training forward (one given
     * a dropout Rng) runs every sentence of the batch twice, under two
     * dropout masks, and the loss adds this weight times the two
     * predictions' symmetric KL divergence (loss_xent_rdrop). The workspace
     * must then hold twice the batch. */
    float rdrop;
} StepSettings;

/* Forward pass and loss. dropout_rng NULL: evaluation (no dropout, no
 * R-Drop); else the dropouts and R-Drop as s says.
 * Errors: TFM_ERR_FORMAT for a batch that does not fit the workspace or has
 * out-of-range ids. */
TfmStatus model_forward_step(Model *m, const Batch *b, const StepSettings *s, Rng *dropout_rng,
                             LossStats *out, TfmErr *err);

/* model_forward_step with label_smoothing, the full dropouts and no R-Drop. */
TfmStatus model_forward(Model *m, const Batch *b, float label_smoothing,
                        Rng *dropout_rng, LossStats *out, TfmErr *err);

/* Zeroes grads, then sets them to d(loss / n_tokens)/d(params) for the batch
 * of the last model_forward (which the forward keeps, with its R-Drop repeat). */
void model_backward(Model *m);

/* Told that grads[0..n) will not change again in this backward pass. */
typedef void (*GradsReady)(void *ctx, float *grads, size_t n);
/* model_backward, calling ready(ctx, ...) as soon as each range of grads is
 * final: each decoder layer (the last first), each encoder layer, then the
 * embeddings. The ranges cover grads once, in the same order for every
 * batch of a model, so data-parallel training can start summing a range
 * across ranks while the rest of the backward pass runs. */
void model_backward_notify(Model *m, GradsReady ready, void *ctx);
/* For a rank with no sentences in a step: zeroes grads and reports the
 * same ranges, in the same order, as model_backward_notify. */
void model_grads_zero_notify(Model *m, GradsReady ready, void *ctx);

/* Number of floats in the parameter array of cfg (no allocation). 0 when
 * the count overflows size_t. */
size_t model_param_count(const ModelConfig *cfg);

/* The length of a source row of S ids without its trailing TOK_PAD (at
 * least 1): its tokens and </s>. */
int model_src_len(const int *row, int S);

/* Packed copies of the encoder's weights (packed_linear.h) for model_encode:
 * faster than sgemm for inference. They copy the weights as they are now:
 * call encoder_pack_update after the weights change (training). */
typedef struct EncoderPack EncoderPack;
TfmStatus encoder_pack_new(EncoderPack **out, const Model *m, TfmErr *err);
void encoder_pack_update(EncoderPack *pk, const Model *m);
void encoder_pack_free(EncoderPack *pk);
/* The bytes encoder_pack_new will allocate for m's weights (int8 for an
 * int8 model), from the list it packs; and what pk holds. */
size_t encoder_pack_bytes(const Model *m);
size_t encoder_pack_held(const EncoderPack *pk);

/* Evaluation-mode encoder (no dropout): enc_out (n·src_len, D) gets the
 * encoder stack's output (after the final LayerNorm for pre-norm) for src
 * (n, src_len) padded with TOK_PAD, computed with pk's packed weights, or
 * with sgemm over the parameters when pk is NULL. With pk, attention also
 * stops at each sentence's end, so a sentence's rows are the same bit for
 * bit however far the batch is padded (the padding rows hold other values).
 * w is the caller's encoder workspace (model_work.h, training 0), of at
 * least n·src_len tokens and src_len positions: the decoder carves it in its
 * own block, so its memory check counts it. Independent of
 * model_alloc_training.
 * Errors: TFM_ERR_FORMAT (ids out of range, src_len > cfg.max_len),
 * TFM_ERR_USAGE (a batch larger than w). */
TfmStatus model_encode(const Model *m, const EncoderPack *pk, ModelWork *w, const int *src, int n,
                       int src_len,                       float *enc_out, TfmErr *err);

/* Typed views of one decoder layer's weights: pointers into m->params, so
 * that code running the layer outside model.c (the incremental decoder)
 * never rebuilds tensor names or assumes the layout. Shapes: D = d_model,
 * F = d_ff; weights (out, in). */
typedef struct {
    const float *wqkv, *bqkv;   /* self-attention q|k|v: (3D, D), (3D) */
    const float *wo, *bo;       /* (D, D), (D) */
    const float *ln1_g, *ln1_b; /* (D) */
    const float *cwq, *cbq;     /* cross-attention query: (D, D), (D) */
    const float *cwkv, *cbkv;   /* cross-attention k|v: (2D, D), (2D) */
    const float *cwo, *cbo;     /* (D, D), (D) */
    const float *ln2_g, *ln2_b;
    const float *w1, *b1;       /* (F, D), (F) */
    const float *w2, *b2;       /* (D, F), (D) */
    const float *ln3_g, *ln3_b;
} DecLayerWeights;

/* Decoder layer i's weights (0 <= i < cfg.dec_layers). */
DecLayerWeights model_dec_layer_weights(const Model *m, int i);

/* The decoder stack's final LayerNorm (pre-norm); NULLs for post-norm. */
void model_dec_final_ln(const Model *m, const float **g, const float **b);

/* int8 weights (tfm translate --precision int8, tfm quantize): every
 * matrix (a tensor of more than one row: the projections and the
 * embeddings; not the biases and norms) quantized row by row
 * (int8_quantize_row) and replaced by its int8 values times the row's
 * scale, exactly; sets m->int8. Quantizing again changes nothing. */
void model_quantize(Model *m);
/* Whether tensor t is stored as int8 in an int8 model. */
static inline bool model_tensor_int8(const TensorInfo *t) { return t->rows > 1; }

/* Translation, once every decoder is made (their products packed): the
 * float weights that only the products read (every TENSOR_MATRIX, and an
 * output projection of its own) go back to the system, the pages wholly
 * inside them (they then read as zeros). Embeddings, biases and norms stay.
 * Sets m->matrices_released: decoder_init refuses the model then, and
 * nothing may train, save or repack it. */
void model_release_matrices(Model *m);

/* Looks up a tensor by name; NULL if absent. */
const TensorInfo *model_tensor(const Model *m, const char *name);

void model_free(Model *m);

#endif
