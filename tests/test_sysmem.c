/* Tests of sysmem (the up-front memory check) and of model_work_bytes, the
 * estimate tfm train feeds it. */
#include <math.h>
#include <string.h>

#include "model/model.h"
#include "base/sysmem.h"
#include "test.h"

TEST(sysmem_available_is_known_here)
{
    CHECK(sysmem_available() > 0);      /* Linux: /proc/meminfo or sysconf */
}

TEST(sysmem_check_refuses_what_cannot_fit)
{
    TfmErr err = {0};
    CHECK_EQ_INT(sysmem_check(1e6, "a small job", "n/a", &err), TFM_OK);
    CHECK_EQ_INT(sysmem_check(1e18, "a huge job", "make it smaller", &err), TFM_ERR_NOMEM);
    CHECK(strncmp(err.msg, "a huge job needs about 1000000000.0 GB of memory, this machine has ",
                  67) == 0);
    CHECK(strstr(err.msg, " GB available (make it smaller)") != NULL);
    CHECK_EQ_INT(sysmem_check(INFINITY, "overflow", "n/a", &err), TFM_ERR_NOMEM);
    CHECK_EQ_INT(sysmem_check(NAN, "nan", "n/a", &err), TFM_ERR_NOMEM);
}

TEST(model_work_bytes_grows_with_the_batch)
{
    ModelConfig c = {.d_model = 32, .heads = 2, .enc_layers = 1, .dec_layers = 1, .d_ff = 64,
                     .norm = NORM_POST, .share_embeddings = true, .vocab_size = 500,
                     .max_len = 42};
    double a = model_work_bytes(&c, 600, 41), b = model_work_bytes(&c, 1200, 41);
    CHECK(a > 0 && isfinite(a));
    /* at least the logits (tokens x vocab floats) */
    CHECK(a >= 600.0 * 500 * sizeof(float));
    CHECK(b > 1.9 * a && b < 2.1 * a);
    c.d_model = 65536;
    c.vocab_size = 1 << 20;
    /* the largest config: huge, counted in doubles, never wrapped around */
    CHECK(model_work_bytes(&c, 1 << 24, 65536) > 1e14);
    /* and the allocation it describes works (and training on it, elsewhere) */
    c = (ModelConfig){.d_model = 32, .heads = 2, .enc_layers = 1, .dec_layers = 1, .d_ff = 64,
                      .norm = NORM_POST, .share_embeddings = true, .vocab_size = 500, .max_len = 42};
    Model m;
    TfmErr err = {0};
    CHECK_EQ_INT(model_init(&m, &c, &err), TFM_OK);
    CHECK_EQ_INT(model_alloc_training(&m, 600, 41, &err), TFM_OK);
    model_free(&m);
}
