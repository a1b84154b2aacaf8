// SPDX-License-Identifier: GPL-2.0
/*
 * op.c - the operation slot, see op.h.
 */
#include <errno.h>
#include <stddef.h>

#include "op.h"
#include "util.h"

/* the operation holding the slot; only the loop's thread touches it */
static struct op_handle *current;

int op_claim(struct op_handle *h)
{
	if (current && current != h)
		return sbrig_set_error(-EBUSY, "an operation is running (%s)",
				       current->ops->kind);
	current = h;
	return 0;
}

void op_release(struct op_handle *h)
{
	if (current == h)
		current = NULL;
}

struct op_handle *op_current(void)
{
	return current;
}
