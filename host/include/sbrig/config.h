/* SPDX-License-Identifier: GPL-2.0 */
/**
 * DOC: rig description (rig/<name>.conf)
 *
 * One INI file per rig, parsed with libinih by one table of keys with range
 * checks; every error names file:line and the key. The format is documented
 * in host/man/sbrig.conf.5. The same table applies ``section.key=value``
 * overrides from the command line (sbrig_config_set()).
 */
#ifndef SBRIG_CONFIG_H
#define SBRIG_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include <sbrig/records.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SBRIG_MAX_KEYS 16
#define SBRIG_URI_MAX 256

/**
 * enum sbrig_line_role - what a rig line is for
 * @SBRIG_LINE_KEY: a key of the target's keypad (output; [key:NAME])
 * @SBRIG_LINE_CHARGER: the charger switch (output; [charger])
 * @SBRIG_LINE_MARKER: the target's marker line (input with edges; [marker])
 */
enum sbrig_line_role {
	SBRIG_LINE_KEY,
	SBRIG_LINE_CHARGER,
	SBRIG_LINE_MARKER,
};

/**
 * struct sbrig_line_cfg - one GPIO line of the rig
 * @name: rig name of the line ("power", "volume-up", "charger", "marker")
 * @role: what the line is for (set by sbrig_config_load() from its section;
 *	compare roles, not names)
 * @chip: gpiochip path (/dev/gpiochip0), name (gpiochip0) or label; or
 *	qmp:/path/to/qmp.sock for the keys of a QEMU guest (see sbrig_gpio)
 * @offset: line offset on the chip (qmp: chips: a Linux input key code)
 * @active_low: the line is active when low
 * @present: the line is configured (false: not wired on this rig)
 */
struct sbrig_line_cfg {
	char name[SBRIG_ID_MAX];
	enum sbrig_line_role role;
	char chip[128];	/* a unix socket path fits after qmp: */
	unsigned int offset;
	bool active_low;
	bool present;
};

/**
 * struct sbrig_config - a parsed rig description
 * @path: file it was loaded from
 * @sha256: SHA-256 of the file's bytes, lowercase hex (provenance)
 * @name: rig name ([rig] name)
 * @keys: keypad keys ([key:NAME] sections), in file order
 * @nkeys: entries used in @keys
 * @charger: charger switch output ([charger])
 * @marker: marker input from the target ([marker])
 * @power_uri: libiio context URI ([power] uri: local:, ip:host[:port])
 * @power_device: IIO device name or id ([power] device, e.g. ina226)
 * @shunt_uohm: shunt resistor ([power] shunt_uohm; 0 = keep the device's)
 * @sample_rate_hz: requested sampling rate (0 = device default)
 * @buffer_samples: samples per IIO buffer refill ([power] buffer_samples;
 *	0 = a quarter second's worth at the sensor's rate)
 * @i2c_hz: the sensor's I2C bus clock (its ceiling: sbrig_power_max_rate())
 * @asleep_uA: the target is asleep while its supply draws at most this
 *	([power] asleep_uA; 0: the supply is no witness of its sleep)
 * @target_uri: target link URI ([target] uri: serial:/dev/ttyS1[:BAUD],
 *	tcp:HOST:PORT)
 * @machine_uri: where the target machine's run state is read, a witness
 *	of its sleep ([target] state_uri: qmp:PATH; "": none, see
 *	sbrig/machine.h)
 * @press_ms: default key press duration ([timing] press_ms)
 * @settle_ms: default settle time ([timing] settle_ms)
 * @ping_interval_ms: clock ping period on the target link
 * @link_timeout_ms: no frame for this long = link down, reconnect
 * @quiet_ms: no frame for this long (after the link was up once) = the
 *	target is asleep (its agent is frozen): sbrigd's "wait asleep" and
 *	latency rounds ([timing] quiet_ms)
 */
struct sbrig_config {
	char path[PATH_MAX];
	char sha256[65];
	char name[64];
	struct sbrig_line_cfg keys[SBRIG_MAX_KEYS];
	unsigned int nkeys;
	struct sbrig_line_cfg charger;
	struct sbrig_line_cfg marker;
	char power_uri[SBRIG_URI_MAX];
	char power_device[64];
	uint32_t shunt_uohm;
	uint32_t sample_rate_hz;
	uint32_t buffer_samples;
	uint32_t i2c_hz;
	uint32_t asleep_uA;
	char target_uri[SBRIG_URI_MAX];
	char machine_uri[SBRIG_URI_MAX];
	uint32_t press_ms;
	uint32_t settle_ms;
	uint32_t ping_interval_ms;
	uint32_t link_timeout_ms;
	uint32_t quiet_ms;
};

/**
 * sbrig_config_load() - parse a rig description
 * @path: the .conf file
 * @cfg: filled in (defaults first, then the file); caller-owned storage
 *
 * Return: 0, or -errno with sbrig_errmsg() naming "path:line: key: why".
 */
int sbrig_config_load(const char *path, struct sbrig_config *cfg);

/**
 * sbrig_config_set() - apply one "section.key=value" override
 * @cfg: a loaded config
 * @assignment: e.g. "power.uri=ip:localhost" or "key:power.line=3"
 *
 * Uses the same key table and range checks as the file parser.
 *
 * Return: 0, or -errno with sbrig_errmsg() naming the assignment.
 */
int sbrig_config_set(struct sbrig_config *cfg, const char *assignment);

/**
 * sbrig_config_line() - find a configured output or input line by name
 * @cfg: a loaded config
 * @name: key name, "charger" or "marker"
 *
 * Return: the line (owned by @cfg), or NULL if no such line is present.
 */
const struct sbrig_line_cfg *sbrig_config_line(const struct sbrig_config *cfg,
					       const char *name);

#ifdef __cplusplus
}
#endif

#endif /* SBRIG_CONFIG_H */
