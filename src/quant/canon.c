/* The canonical order's lane combine (quant_canon.h): the chain over lanes 0..31 (default since
 * 2026-12-04) or, with STRATA_CANON=tree, the 16-8-4-2-1 tree; read once when the program starts. */
#include "quant/quant_canon.h"
#include "core/env.h"
#include <string.h>

int canon_serial = 1;

__attribute__((constructor)) static void canon_mode_init(void) {
    canon_serial = strcmp(env_str(ENV_CANON), "tree") != 0;
}
