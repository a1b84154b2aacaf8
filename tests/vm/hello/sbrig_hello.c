// SPDX-License-Identifier: GPL-2.0
/*
 * sbrig_hello: the VM harness's own self-check module.
 *
 * It proves that the out-of-tree build works for each arch. The
 * MODULE_DEVICE_TABLE makes modpost parse a device table, which is what
 * fails on armhf with Debian's amd64-built modpost (see FACTS.md).
 *
 * It also provokes what the harness must catch, on request: a WARN at load
 * (warn=1: the splat check, tests/vm/splat.py) and a leaked allocation
 * (leak=N bytes: kmemleak on the debug kernel).
 */
#include <linux/bug.h>
#include <linux/module.h>
#include <linux/mod_devicetable.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>

static int greeting = 42;
module_param(greeting, int, 0444);
MODULE_PARM_DESC(greeting, "number printed at load");

static bool warn;
module_param(warn, bool, 0444);
MODULE_PARM_DESC(warn, "WARN at load (the harness's splat check)");

static int leak;
module_param(leak, int, 0444);
MODULE_PARM_DESC(leak, "bytes allocated at load and never freed (kmemleak)");

/* noinline: the allocation's stack trace names this function */
static noinline void sbrig_hello_leak(int size)
{
	void *p = kmalloc(size, GFP_KERNEL);

	pr_info("sbrig_hello: leaking %d bytes at %px\n", size, p);
}

static const struct of_device_id sbrig_hello_of_match[] = {
	{ .compatible = "sbrig,hello" },
	{ }
};
MODULE_DEVICE_TABLE(of, sbrig_hello_of_match);

static int __init sbrig_hello_init(void)
{
	pr_info("sbrig_hello: loaded, greeting=%d\n", greeting);
	WARN(warn, "sbrig_hello: warning on request (warn=1)\n");
	if (leak > 0)
		sbrig_hello_leak(leak);
	return 0;
}

static void __exit sbrig_hello_exit(void)
{
	pr_info("sbrig_hello: unloaded\n");
}

module_init(sbrig_hello_init);
module_exit(sbrig_hello_exit);
MODULE_DESCRIPTION("sbrig VM harness self-check module");
MODULE_LICENSE("GPL");
