/* loss: label-smoothed cross-entropy over logits, fused with log-softmax and
 * its gradient (one pass over the (M, V) logits instead of three). Matches
 * PyTorch's CrossEntropyLoss(label_smoothing=eps, reduction='sum'): the
 * target distribution is (1-eps)·onehot(y) + eps/V over all V classes. */
#ifndef TFM_LOSS_H
#define TFM_LOSS_H

/* For each of the m rows of logits (m, V) with target tgt[r] (0 <= tgt < V):
 *   loss_r = -Σ_c q_c·log p_c,  nll_r = -log p_{tgt},  p = softmax(row).
 * Returns Σ loss_r in *loss and Σ nll_r in *nll (accumulated in double, in a
 * fixed order). If grad_scale != 0 the logits are OVERWRITTEN by
 * grad_scale · ∂loss_r/∂logits = grad_scale · (p - q); else left unchanged.
 * row_scratch: 3m doubles. *n_correct (if not NULL) gets the number of rows
 * whose target is the (first) argmax of the logits. */
void loss_xent_smoothed(float *logits, const int *tgt, int m, int v, float eps,
                        float grad_scale, double *row_scratch, double *loss,
                        double *nll, long *n_correct);

/* R-Drop (Liang et al. 2021): logits (2m, V) hold m target tokens twice, row
 * r and row r + m seen through two different dropout masks. Each pair
 * (a, b) costs
 *   loss = ½(xent_a + xent_b) + (alpha/4)·(KL(p_a‖p_b) + KL(p_b‖p_a)),
 * which is the paper's CE_a + CE_b + (alpha/2)·(KL + KL) halved, so that
 * alpha 0 is the plain mean loss over the m tokens. *loss gets Σ loss over
 * the pairs, *nll Σ ½(nll_a + nll_b), *n_correct counts the first copies.
 * tgt has 2m entries (tgt[r + m] == tgt[r]). The gradient (grad_scale != 0)
 * replaces both rows as in loss_xent_smoothed; without it they are left
 * as exp(z - max). diff_scratch: v floats for
 * each of `slices` threads; row_scratch: 3m doubles. */
void loss_xent_rdrop(float *logits, const int *tgt, int m, int v, float eps, float alpha,
                     float grad_scale, float *diff_scratch, int slices, double *row_scratch,
                     double *loss, double *nll, long *n_correct);

#endif
