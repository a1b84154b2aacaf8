/* SPDX-License-Identifier: GPL-2.0 */
/**
 * DOC: scenarios (rig/scenarios/NAME.scn)
 *
 * A scenario is a list of declarative steps, one per line, parsed into a
 * flat program that one engine executes (sbrigd). The language (kept in
 * sync with rig/scenarios/README.md):
 *
 *	name NAME			(optional, once, before the first step)
 *	settle [DURATION]		(default: the rig's settle_ms)
 *	press KEY [DURATION]		(default: the rig's press_ms)
 *	plug | unplug
 *	hold "BLOCKER" DURATION		(via the target agent)
 *	burn DURATION			(target CPU load, via the agent)
 *	policy forced|opportunistic	(the module's policy, via the agent)
 *	state on|mem|standby|freeze [timeout DURATION]
 *					(request a state via the agent; a
 *					 sleep state ends once the target
 *					 is asleep, see below)
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
 * and burn sent to a sleeping target reach it when it wakes. "state" with
 * a sleep state (mem standby freeze) ends when the target is asleep after
 * the agent took the request (quiet for quiet_ms), or has been through a
 * sleep (an "exit" event: it woke again before quiet_ms); "state on" and
 * "policy" end with the agent's answer. POLICY and STATE are the words
 * of sbrig/proto.h's sbrig_proto_policies and sbrig_proto_states.
 * TYPE is an event type of the module's log: block unblock suspend enter
 * exit resume abort policy lost ws_activate ws_relax phase dev_pm; "ARG"
 * must equal the event's argument (blocker or wakeup source name, state,
 * return code) for the wait to end. KEY, LINE and
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

/* A wait's timeout when the scenario gives none (timeout_ns == 0). */
#define SBRIG_STEP_DEFAULT_TIMEOUT_NS 10000000000LL

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
	SBRIG_STEP_POLICY,	/* the module's policy (name), via the agent */
	SBRIG_STEP_STATE,	/* request a state (name), via the agent */
};

/**
 * struct sbrig_step - one step of a parsed scenario
 * @op: kind
 * @line: source line (for error and progress messages)
 * @duration_ns: SETTLE/PRESS/HOLD/BURN duration (0 with @rig_default)
 * @rig_default: SETTLE/PRESS without a duration: the rig's [timing]
 *	settle_ms / press_ms
 * @timeout_ns: WAIT_* and STATE timeout (0 = the default, 10 s)
 * @name: PRESS key, HOLD blocker, WAIT_EVENT type, WAIT_EDGE line,
 *	POLICY policy, STATE state
 * @arg: WAIT_EVENT argument to match ("" = any)
 * @rising: WAIT_EDGE direction
 * @count: REPEAT count
 * @match: REPEAT: index of its END; END: index of its REPEAT
 */
struct sbrig_step {
	enum sbrig_step_op op;
	unsigned int line;
	int64_t duration_ns;
	bool rig_default;
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
 * sbrig_scenario_parse_buf() - parse scenario text of a known length
 * @text: the scenario's bytes (need not be NUL-terminated; read only,
 *	still the caller's after the call); may be NULL if @len is 0
 * @len: their count: every byte is parsed and hashed
 * @origin: name used in error messages and as @path (copied)
 *
 * A NUL byte is an error at its file:line:column (a scenario is text): it
 * no longer cuts the text short with the hash covering only the part
 * parsed. This is what sbrigd uses for a `run` body of N bytes.
 *
 * Return: as sbrig_scenario_load(); @sha256 is that of all @len bytes.
 */
struct sbrig_scenario *sbrig_scenario_parse_buf(const char *text, size_t len,
						const char *origin);

/**
 * sbrig_scenario_parse() - parse NUL-terminated scenario text
 * @text: the scenario, up to its NUL (the caller's)
 * @origin: name used in error messages and as @path
 *
 * Same as sbrig_scenario_parse_buf(@text, strlen(@text), @origin).
 *
 * Return: as sbrig_scenario_load().
 */
struct sbrig_scenario *sbrig_scenario_parse(const char *text,
					    const char *origin);

/**
 * sbrig_step_describe() - a step as one line of text (progress, errors)
 * @s: the step
 * @with_timeout: append " timeout D" to wait and state steps (D the
 *	step's timeout, or SBRIG_STEP_DEFAULT_TIMEOUT_NS); false gives the
 *	step without it,
 *	e.g. for "wait event resume timed out after 10s"
 * @buf: out, NUL-terminated, cut to @size - 1 bytes
 * @size: size of @buf
 *
 * The text is the one sbrigd's progress lines have always shown, e.g.
 * ``press power default``, ``hold "x" 500ms``,
 * ``wait event block "x" timeout 10s``, ``state mem timeout 10s``,
 * ``repeat 3``. Durations are
 * written as sbrig_format_duration() does.
 *
 * Return: the length of the whole description, like snprintf() (a value
 * >= @size means it was cut).
 */
int sbrig_step_describe(const struct sbrig_step *s, bool with_timeout,
			char *buf, size_t size);

/**
 * sbrig_format_duration() - a duration in the largest exact unit
 * @ns: the duration
 * @buf: out, NUL-terminated, cut to @size - 1 bytes
 * @size: size of @buf (32 bytes always suffice)
 *
 * Whole seconds ("2s"), else whole milliseconds ("250ms"), else
 * nanoseconds ("1500ns"); sbrig_parse_duration() reads it back.
 *
 * Return: the length, like snprintf().
 */
int sbrig_format_duration(int64_t ns, char *buf, size_t size);

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
