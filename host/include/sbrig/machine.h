/* SPDX-License-Identifier: GPL-2.0 */
/**
 * DOC: the target machine's run state (a witness of its sleep)
 *
 * What the machine the target runs on says of it, from outside the
 * target's software: on the virtual rig, QEMU's run state ("suspended"
 * while the guest is in ACPI S3; "running" in s2idle, which QEMU does not
 * see). The rig's config names it by URI ([target] state_uri), one
 * backend per scheme:
 *
 *   qmp:PATH    a QMP socket that answers query-status (QEMU's, or the
 *               virtual rig's line proxy, which asks QEMU)
 *
 * The object never waits in a poll loop's turn but for a bounded
 * connect: sbrig_machine_poll() asks for the state, the answer comes out
 * of sbrig_machine_process() on the fd and at the deadline, and
 * sbrig_machine_state() tells the last state seen and when. A machine
 * that cannot be reached has no state ("") until it can be; the
 * connection is made again at the next poll.
 */
#ifndef SBRIG_MACHINE_H
#define SBRIG_MACHINE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct sbrig_machine;

/**
 * sbrig_machine_check_uri() - is @uri a machine URI this library opens?
 * @uri: e.g. "qmp:/run/vrig/qmp.sock"
 *
 * Return: 0, or -EINVAL with sbrig_errmsg() "'URI': expected ...".
 */
int sbrig_machine_check_uri(const char *uri);

/**
 * sbrig_machine_new() - a machine's state, by URI
 * @uri: see the DOC above
 *
 * Nothing is connected yet (sbrig_machine_poll() does it).
 *
 * Return: the object, which the caller frees with sbrig_machine_free(),
 * or NULL with errno and sbrig_errmsg() (-EINVAL: a bad URI).
 */
struct sbrig_machine *sbrig_machine_new(const char *uri);

/** sbrig_machine_free() - close it; NULL is fine */
void sbrig_machine_free(struct sbrig_machine *m);

/**
 * sbrig_machine_poll() - ask for the state now (no-op while a question is
 *	unanswered); connects first if needed (waits at most ~200 ms, at
 *	most once a second)
 * @m: the machine
 *
 * Return: 0, or -errno with sbrig_errmsg() (the state stays unknown).
 */
int sbrig_machine_poll(struct sbrig_machine *m);

/**
 * sbrig_machine_process() - read answers; call on the fd's events and at
 *	the deadline
 * @m: the machine
 * @revents: the fd's revents (0 at the deadline)
 *
 * Return: 1 when the state changed, 0 otherwise.
 */
int sbrig_machine_process(struct sbrig_machine *m, short revents);

/** sbrig_machine_fd() - the fd to poll (-1: none), its events */
int sbrig_machine_fd(const struct sbrig_machine *m, short *events);

/** sbrig_machine_deadline() - when process must run (INT64_MAX: never) */
int64_t sbrig_machine_deadline(const struct sbrig_machine *m);

/**
 * sbrig_machine_state() - the last state seen
 * @m: the machine
 * @at_ns: out (may be NULL): CLOCK_MONOTONIC of the answer that said it
 *
 * Return: the backend's word ("suspended", "running", "paused",
 * "shutdown", ...), "" when none is known (not answered yet, or the
 * machine could not be reached since). Owned by @m.
 */
const char *sbrig_machine_state(const struct sbrig_machine *m,
				int64_t *at_ns);

/** sbrig_machine_uri() - the URI it was made from */
const char *sbrig_machine_uri(const struct sbrig_machine *m);

#ifdef __cplusplus
}
#endif

#endif /* SBRIG_MACHINE_H */
