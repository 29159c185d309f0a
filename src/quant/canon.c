/* The canonical order's lane combine (quant_canon.h): the tree (default) or, with
 * STRATA_CANON=serial, the chain over lanes 0..31; read once when the program starts. */
#include "quant/quant_canon.h"
#include "core/env.h"
#include <string.h>

int canon_serial = 0;

__attribute__((constructor)) static void canon_mode_init(void) {
    canon_serial = strcmp(env_str(ENV_CANON), "serial") == 0;
}
