/* Tests for optim: schedules at known steps, Adam against a hand-computed
 * example, decoupled weight decay, clipping, the weights' moving average. */
#include "test.h"

#include <string.h>

#include "nn/optim.h"

TEST(test_lr_noam_known_steps)
{
    LrConfig lc = {.schedule = LR_NOAM, .warmup = 4000, .factor = 1.0f};
    /* factor * d^-0.5 * min(step^-0.5, step * warmup^-1.5), d = 512 */
    CHECK_NEAR(lr_at(&lc, 512, 1, 0, 0), 1.746928107e-07, 1e-13);
    CHECK_NEAR(lr_at(&lc, 512, 4000, 0, 0), 6.987712430e-04, 1e-10);
    CHECK_NEAR(lr_at(&lc, 512, 16000, 0, 0), 3.493856215e-04, 1e-10);
    lc.factor = 2.0f;
    CHECK_NEAR(lr_at(&lc, 512, 4000, 0, 0), 2 * 6.987712430e-04, 1e-10);
}

TEST(test_lr_inverse_sqrt_and_constant)
{
    LrConfig lc = {.schedule = LR_INVERSE_SQRT, .warmup = 4000, .peak = 5e-4f};
    CHECK_NEAR(lr_at(&lc, 512, 2000, 0, 0), 2.5e-4, 1e-9);
    CHECK_NEAR(lr_at(&lc, 512, 4000, 0, 0), 5e-4, 1e-9);
    CHECK_NEAR(lr_at(&lc, 512, 16000, 0, 0), 2.5e-4, 1e-9);
    lc.schedule = LR_CONSTANT;
    CHECK_NEAR(lr_at(&lc, 512, 1, 0, 0), 5e-4, 1e-9);
    CHECK_NEAR(lr_at(&lc, 512, 123456, 0, 0), 5e-4, 1e-9);
}

TEST(test_lr_linear_and_cosine_decay_to_final)
{
    LrConfig lc = {.schedule = LR_LINEAR, .warmup = 100, .peak = 2e-3f};
    CHECK_NEAR(lr_at(&lc, 512, 50, 1100, 0), 1e-3, 1e-9);   /* warm-up */
    CHECK_NEAR(lr_at(&lc, 512, 100, 1100, 0), 2e-3, 1e-9);  /* peak */
    CHECK_NEAR(lr_at(&lc, 512, 600, 1100, 0), 1e-3, 1e-9);  /* half way down */
    CHECK_NEAR(lr_at(&lc, 512, 1100, 1100, 0), 0.0, 1e-12); /* zero at the last step */
    CHECK_NEAR(lr_at(&lc, 512, 5000, 1100, 0), 0.0, 1e-12); /* and stays there */
    lc.final = 1e-4f;
    CHECK_NEAR(lr_at(&lc, 512, 600, 1100, 0), 1e-4 + 0.5 * (2e-3 - 1e-4), 1e-9);
    CHECK_NEAR(lr_at(&lc, 512, 1100, 1100, 0), 1e-4, 1e-9);
    lc.schedule = LR_COSINE;
    lc.final = 0;
    CHECK_NEAR(lr_at(&lc, 512, 100, 1100, 0), 2e-3, 1e-9);
    CHECK_NEAR(lr_at(&lc, 512, 350, 1100, 0), 2e-3 * 0.5 * (1 + cos(M_PI / 4)), 1e-9);
    CHECK_NEAR(lr_at(&lc, 512, 600, 1100, 0), 1e-3, 1e-9);
    CHECK_NEAR(lr_at(&lc, 512, 1100, 1100, 0), 0.0, 1e-12);
}

TEST(test_lr_time_horizon_takes_the_larger_share)
{
    LrConfig lc = {.schedule = LR_LINEAR, .warmup = 100, .peak = 2e-3f,
                   .horizon = LR_HORIZON_TIME};
    /* the time share leads: a quarter of the budget used at step 200 of 1100 */
    CHECK_NEAR(lr_at(&lc, 512, 200, 1100, 0.25), 1.5e-3, 1e-9);
    /* the step share leads */
    CHECK_NEAR(lr_at(&lc, 512, 600, 1100, 0.25), 1e-3, 1e-9);
    /* no step limit: time alone; the budget spent: final, and no further */
    CHECK_NEAR(lr_at(&lc, 512, 5000, 0, 0.5), 1e-3, 1e-9);
    CHECK_NEAR(lr_at(&lc, 512, 5000, 0, 0), 2e-3, 1e-9);
    CHECK_NEAR(lr_at(&lc, 512, 5000, 0, 1.7), 0.0, 1e-12);
    /* warm-up ignores the time share */
    CHECK_NEAR(lr_at(&lc, 512, 50, 0, 0.9), 1e-3, 1e-9);
    lc.schedule = LR_COSINE;
    CHECK_NEAR(lr_at(&lc, 512, 5000, 0, 0.5), 1e-3, 1e-9);
}

TEST(test_adam_hand_computed)
{
    /* Two steps with b1 0.9, b2 0.999, eps 1e-8, lr 0.1; expected values from
     * the textbook formulas evaluated in double precision. */
    AdamConfig tc = {.beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f};
    Adam a;
    CHECK(adam_init(&a, 2, &tc, NULL) == TFM_OK);
    float p[2] = {1.0f, -2.0f};
    float g1[2] = {0.5f, -1.0f}, g2[2] = {0.25f, 1.0f};
    adam_update(&a, p, g1, 0.1f);
    CHECK_NEAR(p[0], 0.9, 1e-6);
    CHECK_NEAR(p[1], -1.9, 1e-6);
    adam_update(&a, p, g2, 0.1f);
    CHECK_NEAR(p[0], 0.8067820405, 1e-6);
    CHECK_NEAR(p[1], -1.9052631588, 1e-6);
    CHECK_EQ_INT(a.step, 2);
    adam_free(&a);
}

TEST(test_adam_weight_decay_is_decoupled)
{
    /* With a zero gradient Adam's own step is 0, so only lr * wd * p remains. */
    AdamConfig tc = {.beta1 = 0.9f, .beta2 = 0.98f, .eps = 1e-9f, .weight_decay = 0.5f};
    Adam a;
    CHECK(adam_init(&a, 1, &tc, NULL) == TFM_OK);
    float p[1] = {2.0f}, g[1] = {0.0f};
    adam_update(&a, p, g, 0.1f);
    CHECK_NEAR(p[0], 2.0 - 0.1 * 0.5 * 2.0, 1e-6);
    adam_free(&a);
}

TEST(test_adam_spared_parameters_are_not_decayed)
{
    /* Parameters 1 and 2 spared. With a zero gradient they stay and the
     * others shrink by lr * wd * p. With gradients, each parameter takes the
     * bits of an optimizer that decays all (0, 3) or none (1, 2). */
    AdamConfig tc = {.beta1 = 0.9f, .beta2 = 0.98f, .eps = 1e-9f, .weight_decay = 0.5f};
    AdamConfig none = tc;
    none.weight_decay = 0;
    Adam a, b, c;
    CHECK(adam_init(&a, 4, &tc, NULL) == TFM_OK);
    CHECK(adam_spare_from_decay(&a, 1, 2, NULL) == TFM_OK);
    CHECK(adam_spare_from_decay(&a, 3, 2, NULL) == TFM_ERR_CONFIG);   /* beyond n */
    float p[4] = {2.0f, 2.0f, -3.0f, 4.0f}, zero[4] = {0};
    adam_update(&a, p, zero, 0.1f);
    CHECK_NEAR(p[0], 2.0 - 0.1 * 0.5 * 2.0, 1e-6);
    CHECK(p[1] == 2.0f && p[2] == -3.0f);
    CHECK_NEAR(p[3], 4.0 - 0.1 * 0.5 * 4.0, 1e-6);
    adam_free(&a);

    CHECK(adam_init(&a, 4, &tc, NULL) == TFM_OK);
    CHECK(adam_spare_from_decay(&a, 1, 2, NULL) == TFM_OK);
    CHECK(adam_init(&b, 4, &tc, NULL) == TFM_OK);
    CHECK(adam_init(&c, 4, &none, NULL) == TFM_OK);
    const float start[4] = {0.3f, -0.7f, 1.1f, 2.5f}, g[4] = {0.25f, -1.0f, 0.5f, 3.0f};
    float q[4], all[4], nodecay[4];
    memcpy(q, start, sizeof q);
    memcpy(all, start, sizeof q);
    memcpy(nodecay, start, sizeof q);
    for (int step = 0; step < 3; step++) {
        adam_update(&a, q, g, 0.01f);
        adam_update(&b, all, g, 0.01f);
        adam_update(&c, nodecay, g, 0.01f);
    }
    CHECK(q[0] == all[0] && q[3] == all[3]);
    CHECK(q[1] == nodecay[1] && q[2] == nodecay[2]);
    CHECK(q[1] != all[1] && q[2] != all[2]);   /* the decay did move them there */
    adam_free(&a);
    adam_free(&b);
    adam_free(&c);
}

TEST(test_clip_grad_norm)
{
    float g[2] = {3.0f, 4.0f};
    CHECK_NEAR(clip_grad_norm(g, 2, 0.0f), 5.0, 1e-6);   /* 0: no clipping */
    CHECK_NEAR(g[0], 3.0, 0);
    CHECK_NEAR(clip_grad_norm(g, 2, 1.0f), 5.0, 1e-6);
    CHECK_NEAR(g[0], 0.6, 1e-5);
    CHECK_NEAR(g[1], 0.8, 1e-5);
}

TEST(test_ema_decay_ramps_up_to_the_setting)
{
    /* min(decay, (1 + step) / (10 + step)) */
    CHECK_NEAR(ema_decay_at(0.999f, 1), 2.0 / 11.0, 1e-7);
    CHECK_NEAR(ema_decay_at(0.999f, 90), 91.0 / 100.0, 1e-7);
    CHECK_NEAR(ema_decay_at(0.999f, 8991), 0.999, 1e-7);   /* ramp 0.999 here */
    CHECK_NEAR(ema_decay_at(0.999f, 100000), 0.999, 1e-7);
    CHECK_NEAR(ema_decay_at(0.5f, 1), 2.0 / 11.0, 1e-7);
    CHECK_NEAR(ema_decay_at(0.5f, 100), 0.5, 1e-7);
}

TEST(test_ema_update_hand_computed)
{
    float ema[3] = {1.0f, -2.0f, 0.0f};
    const float w[3] = {3.0f, 2.0f, 10.0f};
    ema_update(ema, w, 3, 0.75f);
    /* 0.75 * ema + 0.25 * w */
    CHECK_NEAR(ema[0], 1.5, 1e-6);
    CHECK_NEAR(ema[1], -1.0, 1e-6);
    CHECK_NEAR(ema[2], 2.5, 1e-6);
    ema_update(ema, w, 3, 0.0f);    /* decay 0: the weights themselves */
    CHECK(ema[0] == 3.0f && ema[1] == 2.0f && ema[2] == 10.0f);
}
