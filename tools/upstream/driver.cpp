// SPDX-License-Identifier: Apache-2.0
// Drives upstream Mooncake's real KvEventPublisher exactly as its master's
// call sites do, over a model of MasterService's objects (each with its
// replicas: memory, disk), and keeps the master's truth.  Built only by
// tools/upstream/check.sh against a fetched Mooncake tree: never part of the
// project's build or tests.
//
//   driver ENDPOINT OPS RATE STATUS_FILE TRUTH_FILE [SEED]
//
// -DDIALECT_CONDUCTOR: dev/conductor's call sites (PublishCommitted,
// SyncObjectState, PublishObjectRemoved: master_service.cpp at 19ffa6e
// L8986-9044); otherwise main's (PublishKvStored, PublishKvRemoved,
// PublishKvRemovedAfterEvict: master_service.cpp at 3b5a594 L12740-12812).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "kv_event/kv_event_publisher.h"

using namespace mooncake;

enum { MEM = 1, DISK = 2 };

struct Master {
    KvEventPublisher *pub;
    std::map<std::string, std::map<std::string, unsigned>> objects;  // tenant -> key -> replicas

#ifdef DIALECT_CONDUCTOR
    static std::vector<std::string> media(unsigned r) {  // KvMediaForMetadata
        std::vector<std::string> m;
        if (r & MEM) m.push_back("cpu");
        if (r & DISK) m.push_back("disk");
        return m;
    }
    void put_end(const std::string &t, const std::string &k, unsigned, unsigned now) {
        objects[t][k] = now;
        pub->PublishCommitted(k, media(now), t);  // PublishKvStored, L8986
    }
    void erase(const std::string &t, const std::string &k, unsigned before) {
        objects[t].erase(k);
        pub->PublishObjectRemoved(k, t, "", media(before));  // PublishKvRemoved, L9010
    }
    void evict(const std::string &t, const std::string &k, unsigned before, unsigned after) {
        if (after) objects[t][k] = after; else objects[t].erase(k);
        std::vector<std::string> prev = media(before);  // PublishKvRemovedAfterEvict, L9020
        pub->SyncObjectState(k, media(after), t, "", prev);
    }
    void offload(const std::string &t, const std::string &k, unsigned before) {
        objects[t][k] = before | DISK;
        pub->SyncObjectState(k, media(before | DISK), t, "", media(before));
    }
#else
    static std::string medium_of_type(unsigned type) { return type == MEM ? "cpu" : "disk"; }  // L12740
    static std::string medium_of(unsigned r) { return (r & MEM) ? "cpu" : (r & DISK) ? "disk" : "cpu"; }  // L12754
    void put_end(const std::string &t, const std::string &k, unsigned type, unsigned now) {
        objects[t][k] = now;
        pub->PublishStored(k, medium_of_type(type), TenantId(t));  // PutEnd L4640 -> L12766
    }
    void erase(const std::string &t, const std::string &k, unsigned before) {
        objects[t].erase(k);
        pub->PublishRemoved(k, medium_of(before), TenantId(t));  // Remove L6467 -> L12791
    }
    void evict(const std::string &t, const std::string &k, unsigned, unsigned after) {
        if (after) { objects[t][k] = after; return; }  // still valid: nothing (L12808)
        objects[t].erase(k);
        pub->PublishRemoved(k, medium_of(after), TenantId(t));  // invalid: MediumForMetadata of nothing
    }
    void offload(const std::string &t, const std::string &k, unsigned before) {
        objects[t][k] = before | DISK;  // NotifyOffloadSuccess publishes nothing
    }
#endif
    unsigned get(const std::string &t, const std::string &k) {
        auto it = objects[t].find(k);
        return it == objects[t].end() ? 0 : it->second;
    }
};

static void write_status(KvEventPublisher &p, const char *path) {
    auto st = p.GetStats();
    std::string tmp = std::string(path) + ".tmp";
    std::ofstream f(tmp);
    f << "{\"enabled\":true,\"published_batches\":" << st.published_batches
      << ",\"published_events\":" << st.published_events << ",\"dropped_events\":" << st.dropped_events
      << ",\"skipped_unparsed_keys\":" << st.skipped_unparsed_keys
#ifdef DIALECT_CONDUCTOR
      << ",\"invalid_event_hashes\":" << st.invalid_event_hashes
#endif
      << "}";
    f.close();
    std::rename(tmp.c_str(), path);
}

int main(int argc, char **argv) {
    if (argc < 6) {
        std::fprintf(stderr, "usage: driver ENDPOINT OPS RATE STATUS_FILE TRUTH_FILE [SEED]\n");
        return 2;
    }
    long ops = std::atol(argv[2]);
    double rate = std::atof(argv[3]);
    std::mt19937_64 rng(argc > 6 ? std::atoll(argv[6]) : 1);
    KvEventConfig cfg;
    cfg.enabled = true;
    cfg.bind_endpoint = argv[1];
    cfg.backend_id = "mooncake-master-1";
    KvEventPublisher pub(cfg);
    Master m{&pub, {}};
    write_status(pub, argv[4]);
    std::this_thread::sleep_for(std::chrono::seconds(2));  // the subscriber joins
    const char *tenants[] = {"default", "tenant-1", "tenant-2", "tenant-3"};
    auto start = std::chrono::steady_clock::now();
    for (long i = 0; i < ops; i++) {
        std::string t = tenants[rng() % 4], k = "model-a/layer" + std::to_string(rng() % 40) + "/" +
                                                std::to_string(rng() % 2000);
        unsigned c = m.get(t, k), r = rng() % 1000;
        bool disk = rng() % 10 < 3;
        if (r < 450) {  // a put of a new key: memory, and disk with --root_fs_dir, either order
            if (!c) {
                unsigned first = disk && (rng() & 1) ? DISK : MEM;
                m.put_end(t, k, first, first);
                if (disk) m.put_end(t, k, (MEM | DISK) & ~first, MEM | DISK);
            }
        } else if (r < 650) {
            if (c) m.erase(t, k, c);
        } else if (r < 760) {
            if (c & MEM) m.evict(t, k, c, c & ~MEM);
        } else if (r < 820) {
            if (c & DISK) m.evict(t, k, c, c & ~DISK);
        } else if (r < 890) {
            if (c == MEM) m.offload(t, k, c);
        } else if (c) {  // upsert: UpsertEnd goes through PutEnd
#ifdef DIALECT_CONDUCTOR
            m.evict(t, k, c, 0);  // UpsertStart: the old value is not readable
#endif
            m.put_end(t, k, MEM, MEM);
            if (disk) m.put_end(t, k, DISK, MEM | DISK);
        }
        if (i % 1000 == 999) {
            write_status(pub, argv[4]);
            auto due = start + std::chrono::duration<double>((i + 1) / rate);
            std::this_thread::sleep_until(due);
        }
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));  // sent (LINGER is 0)
    write_status(pub, argv[4]);
    std::ofstream f(argv[5]);
    f << "{";
    bool first = true;
    for (auto &[t, objs] : m.objects) {
        unsigned cpu = 0, dsk = 0;
        for (auto &[k, r] : objs) cpu += (r & MEM) != 0, dsk += (r & DISK) != 0;
        f << (first ? "" : ",") << "\"" << t << "\":{\"objects\":" << objs.size() << ",\"cpu\":" << cpu
          << ",\"disk\":" << dsk << "}";
        first = false;
    }
    f << "}\n";
    f.close();
    return 0;
}
