#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "kv_common.h"
#include "kv_config.h"
#include "version.h"

#define DEFAULT_LISTEN ":19557"

static const char usage[] =
	"usage: mooncake-kv-exporter [flags]\n"
	"\n"
	"Prometheus exporter for the Mooncake Store KV event stream.\n"
	"\n"
	"Sources (one exporter can watch several masters):\n"
	"  --source=name=NAME,zmq=ENDPOINT[,status=URL]   repeatable; NAME is [A-Za-z0-9_.-]+\n"
	"  --zmq.endpoint=ENDPOINT      one source named \"default\" (with --master.url)\n"
	"  --master.url=URL             its master admin base URL (GET URL/kv_events/status)\n"
	"\n"
	"Master status polling:\n"
	"  --master.poll-interval=DUR   default 5s\n"
	"  --master.timeout=DUR         default 2s\n"
	"  --master.max-body-bytes=N    default 1048576; a larger answer is refused and counted\n"
	"\n"
	"Web:\n"
	"  --web.listen-address=[HOST]:PORT   default " DEFAULT_LISTEN " (port 0 picks a free one)\n"
	"  --web.telemetry-path=PATH    default /metrics\n"
	"  --web.max-connections=N      default 64\n"
	"  --web.config.file=PATH       TLS and basic auth, exporter-toolkit format (see README)\n"
	"  --run-as-user=USER           started as root: switch to USER once the port is bound\n"
	"\n"
	"Limits (memory is bounded by these; overflow is counted, never silent):\n"
	"  --limits.max-tenants=N       default 10000 (all sources together)\n"
	"  --limits.max-objects=N       default 10000000 (about 14 bytes each)\n"
	"  --zmq.rcvhwm=N               receive high-water mark in messages, default 10000\n"
	"  --zmq.max-message-size=N     bytes; a larger message disconnects its sender, default 4194304\n"
	"\n"
	"Logging:\n"
	"  --log.level=debug|info|warn|error   default info\n"
	"  --log.format=logfmt|json            default logfmt\n"
	"\n"
	"  --help, --version\n";

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

int kv_parse_duration(const char *s, double *seconds)
{
	double total = 0;
	const char *p = s;
	if (!*p)
		return KV_EINVAL;
	while (*p) {
		char *end;
		errno = 0;
		double v = strtod(p, &end);
		if (end == p || errno || v < 0)
			return KV_EINVAL;
		p = end;
		double unit;
		if (strncmp(p, "ms", 2) == 0)
			unit = 0.001, p += 2;
		else if (*p == 's')
			unit = 1, p++;
		else if (*p == 'm')
			unit = 60, p++;
		else if (*p == 'h')
			unit = 3600, p++;
		else
			return KV_EINVAL;
		total += v * unit;
	}
	*seconds = total;
	return KV_OK;
}

static int parse_size(const char *s, unsigned long long min, unsigned long long max,
                      unsigned long long *out)
{
	char *end;
	errno = 0;
	if (*s == '-' || *s == '\0')
		return KV_EINVAL;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return KV_EINVAL;
	*out = v;
	return KV_OK;
}

static bool name_ok(const char *n)
{
	if (!*n || strlen(n) > 64)
		return false;
	for (const char *p = n; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		      *p == '_' || *p == '.' || *p == '-'))
			return false;
	return true;
}

static bool url_ok(const char *u)
{
	return strncmp(u, "http://", 7) == 0 || strncmp(u, "https://", 8) == 0;
}

static int add_source(kv_config *c, const char *name, const char *zmq, const char *status, char *err,
                      size_t errlen)
{
	if (!name_ok(name)) {
		set_err(err, errlen, "source name \"%s\" must be 1-64 of [A-Za-z0-9_.-]", name);
		return KV_EINVAL;
	}
	for (size_t i = 0; i < c->n_sources; i++)
		if (strcmp(c->sources[i].name, name) == 0) {
			set_err(err, errlen, "source name \"%s\" given twice", name);
			return KV_EINVAL;
		}
	if (!zmq || !*zmq) {
		set_err(err, errlen, "source \"%s\" needs zmq=ENDPOINT", name);
		return KV_EINVAL;
	}
	if (!strstr(zmq, "://")) {
		set_err(err, errlen, "source \"%s\": zmq endpoint \"%s\" is not transport://address", name, zmq);
		return KV_EINVAL;
	}
	if (status && !url_ok(status)) {
		set_err(err, errlen, "source \"%s\": status URL \"%s\" must start with http:// or https://", name,
		        status);
		return KV_EINVAL;
	}
	kv_source_cfg *n = realloc(c->sources, (c->n_sources + 1) * sizeof(*n));
	if (!n)
		return KV_ENOMEM;
	c->sources = n;
	kv_source_cfg *s = &c->sources[c->n_sources++];
	s->name = strdup(name);
	s->zmq = strdup(zmq);
	s->status = status ? strdup(status) : NULL;
	/* a trailing slash on the base URL would double up before the path */
	if (s->status && s->status[0] && s->status[strlen(s->status) - 1] == '/')
		s->status[strlen(s->status) - 1] = '\0';
	return KV_OK;
}

/* name=m0,zmq=tcp://host:5557,status=http://host:9003 */
static int parse_source(kv_config *c, const char *spec, char *err, size_t errlen)
{
	char *copy = strdup(spec), *save = NULL;
	const char *name = NULL, *zmq = NULL, *status = NULL;
	int rc = KV_EINVAL;
	for (char *kv = strtok_r(copy, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '=');
		if (!eq) {
			set_err(err, errlen, "--source: \"%s\" is not key=value", kv);
			goto out;
		}
		*eq = '\0';
		const char **slot = !strcmp(kv, "name") ? &name : !strcmp(kv, "zmq") ? &zmq
		                                        : !strcmp(kv, "status") ? &status : NULL;
		if (!slot) {
			set_err(err, errlen, "--source: unknown key \"%s\" (name, zmq, status)", kv);
			goto out;
		}
		*slot = eq + 1;
	}
	if (!name) {
		set_err(err, errlen, "--source needs name=NAME");
		goto out;
	}
	rc = add_source(c, name, zmq, status, err, errlen);
out:
	free(copy);
	return rc;
}

/* Flags that take a whole number within bounds, stored into kv_config. */
static const struct num_flag {
	const char *name;
	unsigned long long min, max;
	size_t off, size;
} num_flags[] = {
#define NUM(n, lo, hi, field) {n, lo, hi, offsetof(kv_config, field), sizeof(((kv_config *)0)->field)}
	NUM("--master.max-body-bytes", 1024, 1ull << 30, max_status_bytes),
	NUM("--web.max-connections", 1, 10000, web_max_connections),
	NUM("--limits.max-tenants", 1, 10000000, max_tenants),
	NUM("--limits.max-objects", 1, 1ull << 34, max_objects),
	NUM("--zmq.rcvhwm", 0, 100000000, zmq_rcvhwm),
	NUM("--zmq.max-message-size", 1024, 1ull << 31, zmq_max_message_size),
#undef NUM
};

static int set_num(kv_config *c, const struct num_flag *f, const char *val, char *err, size_t errlen)
{
	unsigned long long n;
	if (parse_size(val, f->min, f->max, &n) != KV_OK) {
		set_err(err, errlen, "%s \"%s\" must be a whole number from %llu to %llu", f->name, val, f->min, f->max);
		return KV_EINVAL;
	}
	char *field = (char *)c + f->off;
	if (f->size == sizeof(uint32_t)) {  /* int or unsigned: the bounds keep it in range */
		uint32_t v = (uint32_t)n;
		memcpy(field, &v, sizeof(v));
	} else {
		uint64_t v = n;
		memcpy(field, &v, sizeof(v));
	}
	return KV_OK;
}

static const struct num_flag *find_num(const char *flag)
{
	for (size_t i = 0; i < sizeof(num_flags) / sizeof(num_flags[0]); i++)
		if (!strcmp(flag, num_flags[i].name))
			return &num_flags[i];
	return NULL;
}

static void set_str(char **dst, const char *v)
{
	free(*dst);
	*dst = strdup(v);
}

int kv_config_parse(kv_config *c, int argc, char **argv, FILE *out, char *err, size_t errlen)
{
	memset(c, 0, sizeof(*c));
	c->listen_address = strdup(DEFAULT_LISTEN);
	c->telemetry_path = strdup("/metrics");
	c->poll_interval = 5;
	c->poll_timeout = 2;
	c->max_status_bytes = 1 << 20;
	c->max_tenants = 10000;
	c->max_objects = 10000000;
	c->zmq_rcvhwm = 10000;
	c->zmq_max_message_size = 4 << 20;
	c->web_max_connections = 64;
	c->log_level = KV_LOG_INFO;
	c->log_format = KV_LOG_LOGFMT;
	char *zmq_endpoint = NULL, *master_url = NULL;
	bool timeout_given = false;
	int rc = KV_EINVAL;
	static const char *const known[] = {  /* besides num_flags */
		"--source", "--zmq.endpoint", "--master.url", "--master.poll-interval", "--master.timeout",
		"--web.listen-address", "--web.telemetry-path", "--web.config.file", "--run-as-user",
		"--log.level", "--log.format",
	};

	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
			fputs(usage, out);
			rc = KV_CONFIG_EXIT;
			goto done;
		}
		if (!strcmp(arg, "--version")) {
			fprintf(out, "mooncake-kv-exporter %s (revision %s)\n", KV_VERSION, KV_REVISION);
			rc = KV_CONFIG_EXIT;
			goto done;
		}
		if (strncmp(arg, "--", 2) != 0) {
			set_err(err, errlen, "unexpected argument \"%s\" (see --help)", arg);
			goto done;
		}
		char flag[64];
		const char *val;
		const char *eq = strchr(arg, '=');
		snprintf(flag, sizeof(flag), "%.*s", eq ? (int)(eq - arg) : (int)strlen(arg), arg);
		size_t k = 0;
		while (k < sizeof(known) / sizeof(known[0]) && strcmp(flag, known[k]))
			k++;
		if (k == sizeof(known) / sizeof(known[0]) && !find_num(flag)) {
			set_err(err, errlen, "unknown flag %s (see --help)", flag);
			goto done;
		}
		if (eq) {
			val = eq + 1;
		} else {
			if (i + 1 >= argc) {
				set_err(err, errlen, "flag %s needs a value", flag);
				goto done;
			}
			val = argv[++i];
		}
		const struct num_flag *nf = find_num(flag);
		if (nf) {
			if (set_num(c, nf, val, err, errlen) != KV_OK)
				goto done;
		} else if (!strcmp(flag, "--source")) {
			if (parse_source(c, val, err, errlen) != KV_OK)
				goto done;
		} else if (!strcmp(flag, "--zmq.endpoint")) {
			set_str(&zmq_endpoint, val);
		} else if (!strcmp(flag, "--master.url")) {
			if (!url_ok(val)) {
				set_err(err, errlen, "--master.url \"%s\" must start with http:// or https://", val);
				goto done;
			}
			set_str(&master_url, val);
		} else if (!strcmp(flag, "--master.poll-interval") || !strcmp(flag, "--master.timeout")) {
			double d;
			if (kv_parse_duration(val, &d) != KV_OK || d < 0.01 || d > 3600) {
				set_err(err, errlen, "%s \"%s\" is not a duration between 10ms and 1h (like 5s, 500ms)", flag, val);
				goto done;
			}
			if (!strcmp(flag, "--master.poll-interval")) {
				c->poll_interval = d;
			} else {
				c->poll_timeout = d;
				timeout_given = true;
			}
		} else if (!strcmp(flag, "--web.listen-address")) {
			if (!strrchr(val, ':')) {
				set_err(err, errlen, "--web.listen-address \"%s\" must be [HOST]:PORT", val);
				goto done;
			}
			set_str(&c->listen_address, val);
		} else if (!strcmp(flag, "--web.telemetry-path")) {
			if (val[0] != '/' || strlen(val) < 2 || !strcmp(val, "/-/healthy") || !strcmp(val, "/-/ready")) {
				set_err(err, errlen, "--web.telemetry-path \"%s\" must start with / and not be / or /-/...", val);
				goto done;
			}
			set_str(&c->telemetry_path, val);
		} else if (!strcmp(flag, "--web.config.file")) {
			set_str(&c->web_config_file, val);
		} else if (!strcmp(flag, "--run-as-user")) {
			set_str(&c->run_as_user, val);
		} else if (!strcmp(flag, "--log.level")) {
			static const char *const lv[] = {"debug", "info", "warn", "error"};
			int k = 0;
			while (k < 4 && strcmp(val, lv[k]))
				k++;
			if (k == 4) {
				set_err(err, errlen, "--log.level \"%s\" must be debug, info, warn or error", val);
				goto done;
			}
			c->log_level = (enum kv_log_level)k;
		} else if (!strcmp(flag, "--log.format")) {
			if (strcmp(val, "logfmt") && strcmp(val, "json")) {
				set_err(err, errlen, "--log.format \"%s\" must be logfmt or json", val);
				goto done;
			}
			c->log_format = strcmp(val, "json") ? KV_LOG_LOGFMT : KV_LOG_JSON;
		}
	}
	if (master_url && !zmq_endpoint) {
		set_err(err, errlen, "--master.url needs --zmq.endpoint");
		goto done;
	}
	if (zmq_endpoint && add_source(c, "default", zmq_endpoint, master_url, err, errlen) != KV_OK)
		goto done;
	if (c->n_sources == 0) {
		set_err(err, errlen, "no source: give --zmq.endpoint or --source (see --help)");
		goto done;
	}
	if (c->poll_timeout > c->poll_interval) {
		if (timeout_given) {
			set_err(err, errlen, "--master.timeout must not exceed --master.poll-interval");
			goto done;
		}
		c->poll_timeout = c->poll_interval;  /* the default yields to a short interval */
	}
	rc = KV_CONFIG_RUN;
done:
	free(zmq_endpoint);
	free(master_url);
	return rc;
}

void kv_config_free(kv_config *c)
{
	for (size_t i = 0; i < c->n_sources; i++) {
		free(c->sources[i].name);
		free(c->sources[i].zmq);
		free(c->sources[i].status);
	}
	free(c->sources);
	free(c->listen_address);
	free(c->telemetry_path);
	free(c->web_config_file);
	free(c->run_as_user);
	memset(c, 0, sizeof(*c));
}
