/* cmd_bpe: placeholder until the bpe command is built. */
#include "cmds.h"

TfmStatus cmd_bpe(int argc, char **argv, TfmErr *err)
{
    (void)argc; (void)argv;
    return err_set(err, TFM_ERR_IO, "bpe: not built yet");
}
