/* SPDX-License-Identifier: GPL-2.0 */
/**
 * DOC: target link
 *
 * The host end of the link to the target agent (kernel-module/tools/
 * sbagent), over a UART (``serial:/dev/ttyS1[:BAUD]``, libserialport) or a
 * ser2net-style raw TCP console (``tcp:HOST:PORT``). The wire protocol is
 * documented in host/doc/link-protocol.md and encoded by proto.h.
 *
 * The link is driven by the caller's poll() loop: it never blocks. It
 * reconnects on its own, says HELLO, acknowledges events, asks for
 * retransmission of what a corrupted frame lost, pings for the clock model
 * and retries commands. What it decodes is queued as struct sbrig_link_msg.
 *
 * The queue holds at most SBRIG_LINK_QUEUE_MAX messages. While it is full
 * the link stops reading the transport (sbrig_link_pollfd() asks for no
 * POLLIN): take messages with sbrig_link_next() and call
 * sbrig_link_process() again. Nothing is lost by that: the bytes wait in
 * the transport (socket buffer, TCP window) and then in the agent's ring
 * of 65536 records, which keeps every record the host has not ACKed; what
 * a UART drops meanwhile is asked again with RESEND. After a burst the
 * queue's memory is given back.
 *
 * Frames with a valid CRC but impossible values are refused and counted,
 * and the link stays up: a target time outside 0..SBRIG_TARGET_T_MAX
 * (@bad_times; an EV refused for its time is reported as a GAP of its one
 * seq) and a seq at or above SBRIG_LINK_SEQ_MAX (@bad_seqs), so the next
 * expected seq never wraps around.
 */
#ifndef SBRIG_LINK_H
#define SBRIG_LINK_H

#include <poll.h>
#include <stdbool.h>
#include <stdint.h>

#include <sbrig/clock.h>
#include <sbrig/records.h>

#ifdef __cplusplus
extern "C" {
#endif

struct sbrig_link;

/* Most decoded messages queued at once (1.4 MiB: 352 bytes each). */
#define SBRIG_LINK_QUEUE_MAX	4096
/*
 * Largest target CLOCK_BOOTTIME accepted: 2^62 ns, 146 years of uptime.
 * A larger or negative time in an EV, PONG or BEAT is refused.
 */
#define SBRIG_TARGET_T_MAX	(1LL << 62)
/* Seqs (EV, GAP, HELLO, BEAT) at or above this are refused (no wrap). */
#define SBRIG_LINK_SEQ_MAX	((uint64_t)INT64_MAX)

/**
 * struct sbrig_link_opts - timings (0 = default)
 * @ping_interval_ms: clock ping period (default 1000)
 * @timeout_ms: silence after which the link is considered down (3000)
 * @reconnect_ms: delay between reconnection attempts (500)
 * @cmd_retry_ms: resend an unanswered command after this long (1000)
 */
struct sbrig_link_opts {
	uint32_t ping_interval_ms;
	uint32_t timeout_ms;
	uint32_t reconnect_ms;
	uint32_t cmd_retry_ms;
};

/** enum sbrig_link_msg_type - what sbrig_link_next() returned */
enum sbrig_link_msg_type {
	SBRIG_LINK_HELLO,	/* agent (re)connected; new_boot if rebooted */
	SBRIG_LINK_EVENT,	/* one event-log record, in seq order */
	SBRIG_LINK_GAP,		/* events the target no longer has */
	SBRIG_LINK_STATS,	/* one row of a stats snapshot */
	SBRIG_LINK_REPLY,	/* a command's reply */
	SBRIG_LINK_DONE,	/* an asynchronous command finished */
	SBRIG_LINK_CLOCK,	/* a ping exchange was added to the model */
	SBRIG_LINK_DOWN,	/* the link went down (reason in text) */
};

/**
 * struct sbrig_link_msg - one decoded message
 * @type: which members are valid
 * @hello: agent identity (HELLO)
 * @hello.boot_id: target boot
 * @hello.agent: agent version
 * @hello.kernel: target kernel release
 * @hello.module: suspend_block module version ("-" if not loaded)
 * @hello.new_boot: the boot id differs from the previous HELLO's
 * @hello.log_restart: same boot, but the module's event log starts again
 *	(the module was reloaded): seqs restart below those already seen
 * @event: EVENT (host_t_ns mapped with the current clock model)
 * @gap: GAP: first and last seq lost
 * @gap.from_seq: first seq lost
 * @gap.to_seq: last seq lost
 * @stats: STATS row; @snapshot and @index/@count place it
 * @snapshot: STATS: the snapshot's cmd id
 * @index: STATS: row index in the snapshot
 * @count: STATS: rows in the snapshot
 * @cmd_id: REPLY/DONE: the command
 * @err: REPLY/DONE: 0 or a negative errno from the target
 * @text: REPLY/DONE/DOWN: message
 * @clock: CLOCK: exchange (host send/recv, target time)
 * @clock.host_send_ns: host time the ping was sent
 * @clock.host_recv_ns: host time the pong arrived
 * @clock.target_ns: target time in the pong
 * @clock.retained: the model kept it
 */
struct sbrig_link_msg {
	enum sbrig_link_msg_type type;
	union {
		struct {
			char boot_id[SBRIG_BOOT_ID_MAX];
			char agent[32];
			char kernel[96];
			char module[32];
			bool new_boot;
			bool log_restart;
		} hello;
		struct sbrig_event event;
		struct {
			uint64_t from_seq;
			uint64_t to_seq;
		} gap;
		struct {
			struct sbrig_blocker_stats stats;
			uint32_t snapshot;
			uint32_t index;
			uint32_t count;
		};
		struct {
			uint32_t cmd_id;
			int err;
			char text[256];
		};
		struct {
			int64_t host_send_ns;
			int64_t host_recv_ns;
			int64_t target_ns;
			bool retained;
		} clock;
	};
};

/**
 * struct sbrig_link_status - counters and state for `sbrig status`
 * @connected: transport open and HELLO exchanged
 * @boot_id: current target boot ("" before the first HELLO)
 * @frames_ok: valid frames received
 * @frames_bad: lines that looked like frames but failed the checksum/parse
 * @noise_bytes: bytes outside frames (kernel messages, line noise)
 * @resends: retransmission requests sent
 * @reconnects: times the transport was reopened
 * @reboots: target reboots seen (new boot id)
 * @next_seq: next event seq expected from this boot
 * @events_lost: events reported lost (GAP + module "lost")
 * @log_restarts: module event logs that started again within a boot
 * @last_rx_ns: host CLOCK_MONOTONIC when the last valid frame arrived (0:
 *	none yet). A healthy agent sends a frame at least once a second (BEAT,
 *	PONG), so a long quiet time means its user space is not running: a
 *	suspended (or dead) target. sbrigd's "asleep" test is built on it.
 * @queued: decoded messages not yet taken with sbrig_link_next() (events
 *	wait there for the clock model after a connect or a target's sleep)
 * @bad_times: valid frames refused for a target time outside
 *	0..SBRIG_TARGET_T_MAX (EV, PONG, BEAT)
 * @bad_seqs: valid frames refused for a seq at or above SBRIG_LINK_SEQ_MAX
 *	(EV, GAP, BEAT, HELLO; also a HELLO whose oldest_seq > next_seq)
 * @rx_pauses: times reading stopped because the queue was full
 * @queue_drops: messages dropped because the queue could not take them
 *	(out of memory; 0 unless something is badly wrong)
 * @queue_slots: slots the queue's ring has allocated now
 * @rx_paused: reading is stopped now (the queue is full)
 */
struct sbrig_link_status {
	bool connected;
	char boot_id[SBRIG_BOOT_ID_MAX];
	uint64_t frames_ok;
	uint64_t frames_bad;
	uint64_t noise_bytes;
	uint64_t resends;
	uint64_t reconnects;
	uint64_t reboots;
	uint64_t next_seq;
	uint64_t events_lost;
	uint64_t log_restarts;
	int64_t last_rx_ns;
	uint32_t queued;
	uint64_t bad_times;
	uint64_t bad_seqs;
	uint64_t rx_pauses;
	uint64_t queue_drops;
	uint32_t queue_slots;
	bool rx_paused;
};

/**
 * sbrig_link_new() - create the link (connection happens in process())
 * @uri: serial:/dev/ttyS1[:BAUD] or tcp:HOST:PORT
 * @opts: timings, or NULL for defaults
 *
 * Return: new link (free with sbrig_link_free()), or NULL with errno set
 * and sbrig_errmsg() naming the URI (malformed URI: EINVAL).
 */
struct sbrig_link *sbrig_link_new(const char *uri,
				  const struct sbrig_link_opts *opts);

/**
 * sbrig_link_check_uri() - is @uri a target link URI sbrig_link_new() opens
 * @uri: serial:/dev/TTY[:BAUD] (BAUD 1..4000000) or tcp:HOST:PORT (HOST a
 *	name, an IPv4 address or [IPv6], PORT 1..65535)
 *
 * The same parser as the transport that opens it. Touches no device and
 * no network; needs no library beyond libc (config.c calls it).
 *
 * Return: 0, or -EINVAL with sbrig_errmsg() "'URI': expected SYNTAX" or
 * "'URI': unknown scheme (expected serial:/dev/TTY[:BAUD] or tcp:HOST:PORT)".
 */
int sbrig_link_check_uri(const char *uri);

/** sbrig_link_free() - close; NULL ok */
void sbrig_link_free(struct sbrig_link *link);

/**
 * sbrig_link_pollfd() - what to poll for
 * @link: the link
 * @pfd: filled with fd and events when the transport is open (events
 *	without POLLIN while the queue is full: back-pressure)
 *
 * Call it again after every sbrig_link_process() and after taking
 * messages: what the link wants changes with its state and its queue.
 *
 * Return: 1 if @pfd is valid, 0 if there is nothing to poll (disconnected:
 * just honour sbrig_link_deadline()).
 */
int sbrig_link_pollfd(struct sbrig_link *link, struct pollfd *pfd);

/**
 * sbrig_link_deadline() - when sbrig_link_process() must run next
 * @link: the link
 *
 * Return: host CLOCK_MONOTONIC ns (pings, retries, timeouts, reconnects).
 */
int64_t sbrig_link_deadline(struct sbrig_link *link);

/**
 * sbrig_link_process() - do I/O and timers; never blocks
 * @link: the link
 * @revents: revents of the pollfd (0 if only the deadline passed)
 * @now_ns: host CLOCK_MONOTONIC
 *
 * Return: 0; transport errors are handled (reconnect) and reported as
 * SBRIG_LINK_DOWN messages, not as return values.
 */
int sbrig_link_process(struct sbrig_link *link, short revents,
		       int64_t now_ns);

/**
 * sbrig_link_next() - dequeue one decoded message
 * @link: the link
 * @msg: out
 *
 * Return: 1 if @msg was filled, 0 if the queue is empty.
 */
int sbrig_link_next(struct sbrig_link *link, struct sbrig_link_msg *msg);

/**
 * sbrig_link_command() - queue a command for the agent
 * @link: the link
 * @cmd: verb and arguments as in link-protocol.md, e.g.
 *	``hold "rig test" 500``, ``burn 200``, ``stats``, ``input on``
 * @cmd_id: out: id that the REPLY/DONE/STATS messages carry
 *
 * The command is sent (and resent) once the link is up.
 *
 * Return: 0, or -EINVAL (sbrig_errmsg() says why) / -ENOBUFS.
 */
int sbrig_link_command(struct sbrig_link *link, const char *cmd,
		       uint32_t *cmd_id);

/**
 * sbrig_link_cancel() - give up a command
 * @link: the link
 * @cmd_id: as sbrig_link_command() gave it
 *
 * A command the agent has not answered (REPLY) yet is no longer sent
 * again: its caller gave up on it (a timed-out request), so it neither
 * takes a place among the pending commands nor reaches the agent later.
 * A copy already sent may still run. Unknown ids are ignored.
 */
void sbrig_link_cancel(struct sbrig_link *link, uint32_t cmd_id);

/** sbrig_link_get_status() - fill @st */
void sbrig_link_get_status(struct sbrig_link *link,
			   struct sbrig_link_status *st);

/** sbrig_link_clock() - the link's clock model (owned by @link) */
struct sbrig_clock *sbrig_link_clock(struct sbrig_link *link);

#ifdef __cplusplus
}
#endif

#endif /* SBRIG_LINK_H */
