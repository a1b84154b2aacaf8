// SPDX-License-Identifier: GPL-2.0
/*
 * suspend_block.ko: the 2010 suspend block API (version 5) as a module.
 *
 * The parts are initialised in dependency order and torn down in reverse:
 * event log -> core (blockers, the wakeup source, "main" blocked) ->
 * statistics -> PM hooks -> kernel events (tracepoint probes) -> policy
 * and worker -> /dev/suspend_blocker -> sbevent input nodes -> keypad
 * driver -> marker line.
 */

#define pr_fmt(fmt) "suspend_block: " fmt

#include <linux/module.h>
#include "sb_internal.h"

int sb_debug_mask = SB_DEBUG_EXIT_SUSPEND | SB_DEBUG_WAKEUP |
		    SB_DEBUG_USER_STATE | SB_DEBUG_FAILURE;
module_param_named(debug_mask, sb_debug_mask, int, 0644);
MODULE_PARM_DESC(debug_mask,
		 "1: exit suspend, 2: wakeup blocker, 4: user state, 8: suspend, 16: every blocker, 32: ioctl failures");

static int __init sb_init(void)
{
	int ret;

	ret = sb_events_init(NULL);
	if (ret)
		return ret;
	/* the core kicks the worker (a layer above it) when it may suspend */
	ret = sb_core_init(sb_worker_kick);
	if (ret)
		goto events_exit;
	sb_stats_init(NULL);
	ret = sb_pmhooks_init();
	if (ret)
		goto stats_exit;
	sb_kevents_init();
	ret = sb_policy_init();
	if (ret)
		goto kevents_exit;
	ret = sb_userdev_init();
	if (ret)
		goto policy_exit;
	ret = sb_sbevent_init();
	if (ret)
		goto userdev_exit;
	ret = sb_keypad_init();
	if (ret)
		goto sbevent_exit;
	ret = sb_marker_init();
	if (ret)
		goto keypad_exit;
	pr_info("loaded: policy forced, %s\n",
		"see /sys/kernel/suspend_block");
	return 0;

keypad_exit:
	sb_keypad_exit();
sbevent_exit:
	sb_sbevent_exit();
userdev_exit:
	sb_userdev_exit();
policy_exit:
	sb_policy_exit();
kevents_exit:
	sb_kevents_exit();
	sb_pmhooks_exit();
stats_exit:
	sb_stats_exit();
	sb_core_exit();
events_exit:
	sb_events_exit();
	return ret;
}

static void __exit sb_exit(void)
{
	sb_marker_exit();
	sb_keypad_exit();
	sb_sbevent_exit();
	sb_userdev_exit();
	sb_policy_exit();
	sb_kevents_exit();
	sb_pmhooks_exit();
	sb_stats_exit();
	sb_core_exit();
	sb_events_exit();
}

module_init(sb_init);
module_exit(sb_exit);

MODULE_DESCRIPTION("Suspend blockers and opportunistic suspend (suspend block api v5)");
MODULE_AUTHOR("sbrig developers");
MODULE_LICENSE("GPL");
MODULE_VERSION("0.1.0");
