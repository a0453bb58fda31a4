/* cmd_average: placeholder until the average command is built. */
#include "cmds.h"

TfmStatus cmd_average(int argc, char **argv, TfmErr *err)
{
    (void)argc; (void)argv;
    return err_set(err, TFM_ERR_IO, "average: not built yet");
}
