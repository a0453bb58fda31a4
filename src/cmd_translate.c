/* cmd_translate: placeholder until the translate command is built. */
#include "cmds.h"

TfmStatus cmd_translate(int argc, char **argv, TfmErr *err)
{
    (void)argc; (void)argv;
    return err_set(err, TFM_ERR_IO, "translate: not built yet");
}
