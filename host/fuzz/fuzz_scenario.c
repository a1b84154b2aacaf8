// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz_scenario - libFuzzer harness of the scenario parser
 * (sbrig_scenario_parse_buf(), lib/scenario.c): any bytes, NUL included.
 * A parsed scenario must be consistent (loops matched both ways, hash of
 * every byte) and every step describable; a failure names its origin.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sbrig/sbrig.h>
#include <sbrig/scenario.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sbrig_scenario *sc;
	char buf[600];
	size_t i;

	sc = sbrig_scenario_parse_buf((const char *)data, size, "fuzz.scn");
	if (!sc) {
		if (strncmp(sbrig_errmsg(), "fuzz.scn:", 9))
			abort();
		return 0;
	}
	if (!sc->nsteps || strlen(sc->sha256) != 64)
		abort();
	for (i = 0; i < sc->nsteps; i++) {
		const struct sbrig_step *s = &sc->steps[i];

		if (s->op == SBRIG_STEP_REPEAT &&
		    (s->match >= sc->nsteps || sc->steps[s->match].op != SBRIG_STEP_END ||
		     sc->steps[s->match].match != i || !s->count))
			abort();
		if (s->duration_ns < 0 || s->timeout_ns < 0)
			abort();
		if (sbrig_step_describe(s, true, buf, sizeof(buf)) <= 0 ||
		    sbrig_step_describe(s, false, buf, sizeof(buf)) <= 0)
			abort();
	}
	sbrig_scenario_free(sc);
	return 0;
}
