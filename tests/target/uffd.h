/* SPDX-License-Identifier: GPL-2.0 */
/*
 * uffd.h - one anonymous page whose first touch waits for us (userfaultfd),
 * for test programs that need a system call to block inside the kernel's
 * copy_from_user()/copy_to_user() for as long as they like.
 *
 * Needs CAP_SYS_PTRACE (or vm.unprivileged_userfaultfd=1) for faults
 * taken by the kernel: run as root.
 */
#ifndef SBRIG_UFFD_H
#define SBRIG_UFFD_H

#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Map one page, register it for missing faults; return the uffd or -1. */
static inline int uffd_page(void **page)
{
	long psize = sysconf(_SC_PAGESIZE);
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	int uffd = syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);

	if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api))
		return -1;
	*page = mmap(NULL, psize, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (*page == MAP_FAILED)
		return -1;
	reg.range.start = (uintptr_t)*page;
	reg.range.len = psize;
	if (ioctl(uffd, UFFDIO_REGISTER, &reg))
		return -1;
	return uffd;
}

/* Wait up to @ms for the page's fault; 0 when it came, -1 otherwise. */
static inline int uffd_wait_fault(int uffd, int ms)
{
	struct pollfd p = { .fd = uffd, .events = POLLIN };
	struct uffd_msg msg;

	if (poll(&p, 1, ms) != 1)
		return -1;
	if (read(uffd, &msg, sizeof(msg)) != sizeof(msg))
		return -1;
	return msg.event == UFFD_EVENT_PAGEFAULT ? 0 : -1;
}

/* Let the faulting access go on: the page appears, filled with zeroes. */
static inline int uffd_resolve(int uffd, void *page)
{
	long psize = sysconf(_SC_PAGESIZE);
	struct uffdio_copy copy = { .dst = (uintptr_t)page, .len = psize };
	void *zero = calloc(1, psize);
	int ret;

	if (!zero)
		return -1;
	copy.src = (uintptr_t)zero;
	ret = ioctl(uffd, UFFDIO_COPY, &copy);
	free(zero);
	return ret;
}

#endif /* SBRIG_UFFD_H */
