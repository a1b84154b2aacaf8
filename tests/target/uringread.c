// SPDX-License-Identifier: GPL-2.0
/*
 * uringread - two concurrent io_uring reads on one open event log file
 *
 *	uringread [-w MS]
 *
 * Opens debugfs suspend_blocker_events once and queues, through io_uring
 * (which does not take the file position lock that read(2) takes on a
 * shared file), read A into a page that faults in only when this program
 * lets it (userfaultfd) and, once A is inside the kernel's copy_to_user(),
 * read B into ordinary memory. It waits up to -w MS (default 1000) for a
 * completion while A is held, prints "b-early=1" if B completed meanwhile
 * (the two reads ran at the same time on one cursor) or "b-early=0", then
 * releases A and prints, in completion order, "done A|B RES", then the
 * text A read and the text B read.
 * Exit status: 0, or 1 on an unexpected error.
 */
#include <stdio.h>
#include <linux/io_uring.h>
#include "uffd.h"

#define EVENTS	"/sys/kernel/debug/suspend_blocker_events"
#define LEN	4096

struct ring {
	int fd;
	unsigned int *sq_tail, *sq_mask, *sq_array;
	unsigned int *cq_head, *cq_tail, *cq_mask;
	struct io_uring_sqe *sqes;
	struct io_uring_cqe *cqes;
};

static int ring_setup(struct ring *r)
{
	struct io_uring_params p;
	void *sq, *cq;

	memset(&p, 0, sizeof(p));
	r->fd = syscall(__NR_io_uring_setup, 4, &p);
	if (r->fd < 0)
		return -1;
	sq = mmap(NULL, p.sq_off.array + p.sq_entries * sizeof(unsigned int),
		  PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
		  IORING_OFF_SQ_RING);
	cq = mmap(NULL, p.cq_off.cqes +
		  p.cq_entries * sizeof(struct io_uring_cqe),
		  PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
		  IORING_OFF_CQ_RING);
	r->sqes = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe),
		       PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
		       IORING_OFF_SQES);
	if (sq == MAP_FAILED || cq == MAP_FAILED || r->sqes == MAP_FAILED)
		return -1;
	r->sq_tail = (unsigned int *)((char *)sq + p.sq_off.tail);
	r->sq_mask = (unsigned int *)((char *)sq + p.sq_off.ring_mask);
	r->sq_array = (unsigned int *)((char *)sq + p.sq_off.array);
	r->cq_head = (unsigned int *)((char *)cq + p.cq_off.head);
	r->cq_tail = (unsigned int *)((char *)cq + p.cq_off.tail);
	r->cq_mask = (unsigned int *)((char *)cq + p.cq_off.ring_mask);
	r->cqes = (struct io_uring_cqe *)((char *)cq + p.cq_off.cqes);
	return 0;
}

/* Queue a read of LEN bytes at the file position, in io_uring's workers. */
static int ring_read(struct ring *r, int fd, void *buf, char tag)
{
	unsigned int tail = *r->sq_tail, idx = tail & *r->sq_mask;
	struct io_uring_sqe *sqe = &r->sqes[idx];

	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_READ;
	sqe->flags = IOSQE_ASYNC;
	sqe->fd = fd;
	sqe->addr = (uintptr_t)buf;
	sqe->len = LEN;
	sqe->off = (__u64)-1;
	sqe->user_data = tag;
	r->sq_array[idx] = idx;
	__atomic_store_n(r->sq_tail, tail + 1, __ATOMIC_RELEASE);
	return syscall(__NR_io_uring_enter, r->fd, 1, 0, 0, NULL, 0) == 1 ?
	       0 : -1;
}

/* Take one completion, waiting for it; returns its tag, *res its result. */
static int ring_reap(struct ring *r, int *res)
{
	unsigned int head = *r->cq_head;
	struct io_uring_cqe *cqe;
	int tag;

	while (head == __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE))
		if (syscall(__NR_io_uring_enter, r->fd, 0, 1,
			    IORING_ENTER_GETEVENTS, NULL, 0) < 0 &&
		    errno != EINTR)
			return -1;
	cqe = &r->cqes[head & *r->cq_mask];
	tag = cqe->user_data;
	*res = cqe->res;
	__atomic_store_n(r->cq_head, head + 1, __ATOMIC_RELEASE);
	return tag;
}

int main(int argc, char **argv)
{
	static char bbuf[LEN];
	int wait_ms = 1000, fd, uffd, i, tag, res, ares = 0, bres = 0;
	struct pollfd p;
	struct ring r;
	char *abuf;
	void *page;

	if (argc == 3 && !strcmp(argv[1], "-w")) {
		wait_ms = atoi(argv[2]);
	} else if (argc != 1) {
		fprintf(stderr, "usage: uringread [-w MS]\n");
		return 2;
	}
	fd = open(EVENTS, O_RDONLY);
	uffd = uffd_page(&page);
	if (fd < 0 || uffd < 0 || ring_setup(&r)) {
		perror("uringread: setup");
		return 1;
	}
	abuf = page;
	if (ring_read(&r, fd, abuf, 'A') || uffd_wait_fault(uffd, 10000)) {
		fprintf(stderr, "uringread: read A did not fault\n");
		return 1;
	}
	printf("a-faulted\n");
	if (ring_read(&r, fd, bbuf, 'B'))
		return 1;
	p.fd = r.fd;
	p.events = POLLIN;
	printf("b-early=%d\n", poll(&p, 1, wait_ms) == 1);
	if (uffd_resolve(uffd, page)) {
		perror("uringread: UFFDIO_COPY");
		return 1;
	}
	for (i = 0; i < 2; i++) {
		tag = ring_reap(&r, &res);
		if (tag < 0)
			return 1;
		printf("done %c %d\n", tag, res);
		if (tag == 'A')
			ares = res;
		else
			bres = res;
	}
	if (ares > 0)
		fwrite(abuf, 1, ares, stdout);
	if (bres > 0)
		fwrite(bbuf, 1, bres, stdout);
	return 0;
}
