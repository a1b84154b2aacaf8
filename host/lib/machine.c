// SPDX-License-Identifier: GPL-2.0
/*
 * machine.c - the target machine's run state, see sbrig/machine.h.
 *
 * One ops table per URI scheme (machine_backends[]); the qmp: backend
 * asks query-status over qmp.h's non-blocking client. Only one question
 * is out at a time; its answer replaces the state. A connection that
 * cannot be made, or that is lost, leaves no state ("") until the next
 * poll makes it again (at most once a second: connecting waits).
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sbrig/machine.h>
#include <sbrig/sbrig.h>

#include "internal.h"
#include "qmp.h"
#include "uri.h"

#define MACHINE_CONNECT_MS 200		/* a connect's bounded wait */
#define MACHINE_RETRY_NS (1000 * 1000 * 1000LL)	/* between connects */
#define MACHINE_TAG 1

struct machine_ops;

/**
 * struct sbrig_machine - a machine and what it said last
 * @ops: its backend
 * @uri: as configured
 * @path: the qmp socket
 * @qmp: the connection (NULL: none)
 * @asked: a question is out
 * @next_connect_ns: no connect before this
 * @state: the last state ("": none known)
 * @at_ns: when it was said
 */
struct sbrig_machine {
	const struct machine_ops *ops;
	char uri[256];
	char path[128];
	struct qmp *qmp;
	bool asked;
	int64_t next_connect_ns;
	char state[32];
	int64_t at_ns;
};

/**
 * struct machine_ops - a backend
 * @prefix: its URI scheme
 * @open: parse the URI into @m (no I/O); 0 or -errno
 * @poll, @process: as sbrig_machine_poll(), sbrig_machine_process()
 */
struct machine_ops {
	const char *prefix;
	int (*open)(struct sbrig_machine *m);
	int (*poll)(struct sbrig_machine *m);
	int (*process)(struct sbrig_machine *m, short revents);
};

/* ---- qmp: QEMU's run state -------------------------------------------- */

static int qmp_open(struct sbrig_machine *m)
{
	return sbrig_uri_parse_qmp(m->uri, m->path, sizeof(m->path));
}

static void forget(struct sbrig_machine *m)
{
	m->state[0] = '\0';
	m->asked = false;
}

static int qmp_poll(struct sbrig_machine *m)
{
	int64_t now = sbrig_now_ns();
	int ret;

	if (m->asked)
		return 0;
	if (!m->qmp) {
		if (now < m->next_connect_ns)
			return -ENOTCONN;
		m->next_connect_ns = now + MACHINE_RETRY_NS;
		m->qmp = qmp_new(m->path, MACHINE_CONNECT_MS);
		if (!m->qmp)
			return errno ? -errno : -ECONNREFUSED;
	}
	ret = qmp_send(m->qmp, "query-status", NULL, MACHINE_TAG, NULL);
	if (ret < 0) {
		qmp_free(m->qmp);
		m->qmp = NULL;
		forget(m);
		return ret;
	}
	m->asked = true;
	return 0;
}

static int qmp_process_answers(struct sbrig_machine *m, short revents)
{
	struct qmp_done d;
	int changed = 0;

	if (!m->qmp)
		return 0;
	while (qmp_process(m->qmp, revents, &d) == 1) {
		revents = 0;
		if (d.tag != MACHINE_TAG)
			continue;	/* a lost connection's report */
		m->asked = false;
		if (d.err || !d.status[0]) {
			changed |= m->state[0] != '\0';
			forget(m);
			continue;
		}
		changed |= strcmp(m->state, d.status) != 0;
		snprintf(m->state, sizeof(m->state), "%s", d.status);
		m->at_ns = sbrig_now_ns();
	}
	return changed;
}

static const struct machine_ops machine_backends[] = {
	{ "qmp:", qmp_open, qmp_poll, qmp_process_answers },
};

/* ---- the object --------------------------------------------------------- */

struct sbrig_machine *sbrig_machine_new(const char *uri)
{
	struct sbrig_machine *m;
	int ret = sbrig_machine_check_uri(uri);

	if (ret) {
		errno = -ret;
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		sbrig_set_error(-ENOMEM, "machine: out of memory");
		errno = ENOMEM;
		return NULL;
	}
	snprintf(m->uri, sizeof(m->uri), "%s", uri);
	for (size_t i = 0; i < SBRIG_ARRAY_SIZE(machine_backends); i++)
		if (!strncmp(uri, machine_backends[i].prefix,
			     strlen(machine_backends[i].prefix)))
			m->ops = &machine_backends[i];
	ret = m->ops ? m->ops->open(m) : -EINVAL;
	if (ret) {
		free(m);
		errno = -ret;
		return NULL;
	}
	return m;
}

void sbrig_machine_free(struct sbrig_machine *m)
{
	if (!m)
		return;
	qmp_free(m->qmp);
	free(m);
}

int sbrig_machine_poll(struct sbrig_machine *m)
{
	return m->ops->poll(m);
}

int sbrig_machine_process(struct sbrig_machine *m, short revents)
{
	return m->ops->process(m, revents);
}

int sbrig_machine_fd(const struct sbrig_machine *m, short *events)
{
	int fd = m->qmp ? qmp_fd(m->qmp) : -1;

	*events = fd >= 0 ? qmp_events(m->qmp) : 0;
	return fd;
}

int64_t sbrig_machine_deadline(const struct sbrig_machine *m)
{
	return m->qmp ? qmp_deadline(m->qmp) : INT64_MAX;
}

const char *sbrig_machine_state(const struct sbrig_machine *m,
				int64_t *at_ns)
{
	if (at_ns)
		*at_ns = m->at_ns;
	return m->state;
}

const char *sbrig_machine_uri(const struct sbrig_machine *m)
{
	return m->uri;
}
