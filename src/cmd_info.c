/* cmd_info: placeholder until the info command is built. */
#include "cmds.h"

TfmStatus cmd_info(int argc, char **argv, TfmErr *err)
{
    (void)argc; (void)argv;
    return err_set(err, TFM_ERR_IO, "info: not built yet");
}
