/* cmd_train: placeholder until the train command is built. */
#include "cmds.h"

TfmStatus cmd_train(int argc, char **argv, TfmErr *err)
{
    (void)argc; (void)argv;
    return err_set(err, TFM_ERR_IO, "train: not built yet");
}
