// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz_proto - libFuzzer harness of the target link's frame decoder
 * (sbrig_proto_decode(), lib/proto.c, compiled into the agent too). The
 * input is one received line; its first byte picks the direction. A frame
 * that decodes must encode again and decode to the same type.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sbrig/proto.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sbrig_proto_msg m, again;
	char buf[SBRIG_PROTO_FRAME_MAX + 1];
	const char *tok;
	char word[SBRIG_PROTO_FRAME_MAX];
	size_t off = 0;
	bool from_target;
	int ret, n;

	if (!size)
		return 0;
	from_target = data[0] & 1;
	ret = sbrig_proto_decode((const char *)data + 1, size - 1, from_target,
				 &m, &off);
	if (ret != 1)
		return 0;
	if (off > size - 1)
		abort();
	n = sbrig_proto_encode(&m, buf, sizeof(buf));
	if (n <= 0 || buf[n - 1] != '\n')
		abort();
	if (sbrig_proto_decode(buf, (size_t)n - 1, from_target, &again, NULL) != 1 ||
	    again.type != m.type)
		abort();
	if (m.type == SBRIG_PROTO_H_CMD) {
		tok = m.cmd.args;
		while (sbrig_proto_token(&tok, word, sizeof(word)) == 1)
			;
	}
	return 0;
}
