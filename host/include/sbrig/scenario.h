/* SPDX-License-Identifier: GPL-2.0 */
/**
 * DOC: scenarios (rig/scenarios/NAME.scn)
 *
 * A scenario is a list of declarative steps, one per line, parsed into a
 * flat program that one engine executes (sbrigd). The language (kept in
 * sync with rig/scenarios/README.md):
 *
 *	name NAME			(optional, once, before the first step)
 *	settle DURATION
 *	press KEY [DURATION]		(default: the rig's press_ms)
 *	plug | unplug
 *	hold "BLOCKER" DURATION		(via the target agent)
 *	burn DURATION			(target CPU load, via the agent)
 *	wait event TYPE ["ARG"] [timeout DURATION]
 *	wait edge LINE rising|falling [timeout DURATION]
 *	wait asleep [timeout DURATION]	(the target's agent has been quiet
 *					 for the rig's quiet_ms)
 *	repeat N ... end		(N 1..1000000, nested at most 8 deep)
 *
 * DURATION is a non-negative integer with a unit: ns, us, ms, s (above 0
 * for press, hold, burn and timeout; a wait's default timeout is 10 s).
 * "wait asleep" ends once no frame has come from the target's agent for
 * the rig's [timing] quiet_ms (its user space is frozen: suspended); hold
 * and burn sent to a sleeping target reach it when it wakes.
 * TYPE is an event type of the module's log: block unblock suspend enter
 * exit resume abort policy lost; "ARG" must equal the event's argument
 * (blocker name, state, return code) for the wait to end. KEY, LINE and
 * NAME are 1-31 characters of A-Z a-z 0-9 _ - . ; "BLOCKER" and "ARG" are
 * double-quoted, may hold spaces but no tabs or quotes. '#' starts a
 * comment outside quotes; blank lines are ignored. Errors name
 * file:line:column and what was expected there.
 */
#ifndef SBRIG_SCENARIO_H
#define SBRIG_SCENARIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sbrig/records.h>

#ifdef __cplusplus
extern "C" {
#endif

/** enum sbrig_step_op - step kinds */
enum sbrig_step_op {
	SBRIG_STEP_SETTLE,
	SBRIG_STEP_PRESS,
	SBRIG_STEP_PLUG,
	SBRIG_STEP_UNPLUG,
	SBRIG_STEP_HOLD,
	SBRIG_STEP_BURN,
	SBRIG_STEP_WAIT_EVENT,
	SBRIG_STEP_WAIT_EDGE,
	SBRIG_STEP_WAIT_ASLEEP,	/* the target link is quiet: target asleep */
	SBRIG_STEP_REPEAT,	/* begin: count, end_index */
	SBRIG_STEP_END,		/* end of a repeat: begin_index */
};

/**
 * struct sbrig_step - one step of a parsed scenario
 * @op: kind
 * @line: source line (for error and progress messages)
 * @duration_ns: SETTLE/PRESS/HOLD/BURN duration; 0 = rig default (PRESS)
 * @timeout_ns: WAIT_* timeout (0 = the default, 10 s)
 * @name: PRESS key, HOLD blocker, WAIT_EVENT type, WAIT_EDGE line
 * @arg: WAIT_EVENT argument to match ("" = any)
 * @rising: WAIT_EDGE direction
 * @count: REPEAT count
 * @match: REPEAT: index of its END; END: index of its REPEAT
 */
struct sbrig_step {
	enum sbrig_step_op op;
	unsigned int line;
	int64_t duration_ns;
	int64_t timeout_ns;
	char name[SBRIG_NAME_MAX];
	char arg[SBRIG_NAME_MAX];
	bool rising;
	uint32_t count;
	size_t match;
};

/**
 * struct sbrig_scenario - a parsed scenario
 * @path: file it came from
 * @sha256: SHA-256 of the file's bytes, lowercase hex
 * @name: the "name" directive, or the file's base name
 * @steps: the program
 * @nsteps: its length
 */
struct sbrig_scenario {
	char path[256];
	char sha256[65];
	char name[64];
	struct sbrig_step *steps;
	size_t nsteps;
};

/**
 * sbrig_scenario_load() - parse a scenario file
 * @path: the file
 *
 * Return: new scenario (free with sbrig_scenario_free()), or NULL with
 * errno set and sbrig_errmsg() naming file:line:column.
 */
struct sbrig_scenario *sbrig_scenario_load(const char *path);

/**
 * sbrig_scenario_parse() - parse scenario text (for tests and sbrigd)
 * @text: NUL-terminated scenario
 * @origin: name used in error messages and as @path
 *
 * Return: as sbrig_scenario_load().
 */
struct sbrig_scenario *sbrig_scenario_parse(const char *text,
					    const char *origin);

/** sbrig_scenario_free() - NULL ok */
void sbrig_scenario_free(struct sbrig_scenario *sc);

/**
 * sbrig_parse_duration() - parse "250ms", "2s", "10us", "5ns"
 * @s: text
 * @ns: out
 *
 * Return: 0, or -EINVAL (missing/unknown unit, overflow, negative).
 */
int sbrig_parse_duration(const char *s, int64_t *ns);

#ifdef __cplusplus
}
#endif

#endif /* SBRIG_SCENARIO_H */
