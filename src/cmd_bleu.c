/* cmd_bleu: placeholder until the bleu command is built. */
#include "cmds.h"

TfmStatus cmd_bleu(int argc, char **argv, TfmErr *err)
{
    (void)argc; (void)argv;
    return err_set(err, TFM_ERR_IO, "bleu: not built yet");
}
