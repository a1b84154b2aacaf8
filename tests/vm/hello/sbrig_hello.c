// SPDX-License-Identifier: GPL-2.0
/*
 * sbrig_hello: the VM harness's own self-check module.
 *
 * It proves that the out-of-tree build works for each arch. The
 * MODULE_DEVICE_TABLE makes modpost parse a device table, which is what
 * fails on armhf with Debian's amd64-built modpost (see FACTS.md).
 */
#include <linux/module.h>
#include <linux/mod_devicetable.h>
#include <linux/moduleparam.h>

static int greeting = 42;
module_param(greeting, int, 0444);
MODULE_PARM_DESC(greeting, "number printed at load");

static const struct of_device_id sbrig_hello_of_match[] = {
	{ .compatible = "sbrig,hello" },
	{ }
};
MODULE_DEVICE_TABLE(of, sbrig_hello_of_match);

static int __init sbrig_hello_init(void)
{
	pr_info("sbrig_hello: loaded, greeting=%d\n", greeting);
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
