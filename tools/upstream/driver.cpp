// SPDX-License-Identifier: Apache-2.0
// Drives upstream Mooncake's real KvEventPublisher exactly as its master's
// call sites do, over a model of MasterService's objects (each with its
// replicas: memory, disk), and keeps the master's truth.  Built only by
// tools/upstream/check.sh against a fetched Mooncake tree: never part of the
// project's build or tests.
//
//   driver ENDPOINT OPS RATE STATUS_FILE TRUTH_FILE [SEED]
//
// Environment, for captures (tools/upstream/README.md, "Captures"; check.sh passes it on):
//   DRIVER_KEYS=N         keys per layer and tenant (2000): fewer make removals find objects
//   DRIVER_CLEAR_EVERY=N  every N operations a RemoveAll of one tenant (default, tenant-1,
//                         tenant-2 in turn; tenant-3 never); 0, the default: none
//   DRIVER_CAPTURE=FILE   a SUB socket of the driver's own (RCVHWM 0, connected before the
//                         publisher binds) writes every message it receives to FILE, in the
//                         format of tests/fixtures/upstream/README.md ("NAME.zmqcap")
//
// -DDIALECT_CONDUCTOR: dev/conductor's call sites (PublishCommitted,
// SyncObjectState, PublishObjectRemoved: master_service.cpp at 19ffa6e
// L8986-9044); -DMAIN_3818: main's since PR #3818 (the same three calls and
// PublishCleared, from MasterService's helpers at 00390e6e, cited by function:
// the stored copy gives no lines); otherwise main's at 3b5a594 (PublishKvStored,
// PublishKvRemoved, PublishKvRemovedAfterEvict: master_service.cpp L12740-12812).
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <zmq.h>

#include "kv_event/kv_event_publisher.h"

using namespace mooncake;

enum { MEM = 1, DISK = 2 };

struct Lives {
    long whole = 0, unseen = 0;  // ended lives whose start a subscriber could see, and the rest
};

#ifdef MAIN_3818
// Mooncake main since PR #3818 (master_service.cpp at 00390e6e).  The master
// keeps no announced state: each call site hands the publisher the media it
// computes from the object's replicas at that moment (KvMediaForMetadata:
// completed replicas; KvMediaForRemoval adds PROCESSING and REMOVED ones),
// so where a caller pops replicas before it erases, the removal it publishes
// names no medium and nothing goes on the wire.  `shown` follows what the
// publisher was told (what a subscriber from the first message holds);
// `objects` what the master holds.  Lives are counted over `shown`, as a
// subscriber can see them.
struct Master {
    struct Obj {
        unsigned r = 0;        // completed replicas
        unsigned writing = 0;  // an upsert's replicas, PROCESSING until UpsertEnd
    };
    KvEventPublisher *pub;
    std::map<std::string, std::map<std::string, Obj>> objects;
    std::map<std::string, std::map<std::string, unsigned>> shown;
    std::map<std::string, uint64_t> epoch;    // kv_tenant_epochs_ (BumpKvTenantEpoch)
    std::map<std::string, long> unannounced;  // objects erased while a subscriber still holds them
    std::map<std::string, long> cleared, cleared_withheld;  // RemoveAll: published, and not (an object skipped)
    std::map<std::string, bool> exact;
    std::map<std::string, std::map<std::string, bool>> born_exact;
    std::map<std::string, Lives> lives;

    static std::vector<std::string> media(unsigned r) {  // KvMediaForMetadata
        std::vector<std::string> m;
        if (r & MEM) m.push_back("cpu");
        if (r & DISK) m.push_back("disk");
        return m;
    }
    void show(const std::string &t, const std::string &k, unsigned now) {
        unsigned before = shown[t].count(k) ? shown[t][k] : 0;
        if (!before && now) born_exact[t][k] = exact[t];
        if (before && !now) end(t, k);
        if (now) shown[t][k] = now; else shown[t].erase(k);
    }
    void end(const std::string &t, const std::string &k) {
        bool whole = born_exact[t][k];
        born_exact[t].erase(k);
        (whole ? lives[t].whole : lives[t].unseen)++;
    }
    unsigned held(const std::string &t, const std::string &k) { return shown[t].count(k) ? shown[t][k] : 0; }

    // MasterService's helpers, each calling the publisher as it does.
    void publish_stored(const std::string &t, const std::string &k, unsigned cur) {  // PublishKvStored
        epoch[t]++;
        pub->PublishCommitted(k, media(cur), t);
        show(t, k, held(t, k) | cur);
    }
    // SyncKvObjectState(key, metadata, tenant, previous_media_hint)
    void sync(const std::string &t, const std::string &k, unsigned cur, unsigned prev) {
        if (cur) epoch[t]++;
        pub->SyncObjectState(k, media(cur), t, "", media(prev));
        show(t, k, (held(t, k) & ~(prev & ~cur)) | (cur & ~prev));
    }
    // EraseMetadata(kFull) -> PublishKvRemoved(KvRemovalSnapshot of what the
    // metadata still has): `left`, which a caller that popped replicas first
    // leaves empty.
    void erase(const std::string &t, const std::string &k, unsigned left) {
        pub->PublishObjectRemoved(k, t, "", media(left));
        show(t, k, held(t, k) & ~left);
        objects[t].erase(k);
        if (held(t, k)) unannounced[t]++;
    }

    // The call sites.
    void put_end(const std::string &t, const std::string &k, unsigned type) {  // PutEnd
        Obj &o = objects[t][k];
        o.r |= type;
        publish_stored(t, k, o.r);
    }
    void remove(const std::string &t, const std::string &k) { erase(t, k, objects[t][k].r); }  // Remove
    // BatchEvict and EvictTenantMemoryForQuota (try_evict_group_or_object):
    // the memory replicas are popped, then PublishKvRemovedAfterEvict(key, 1,
    // "cpu"), which syncs a surviving object and returns for an invalid one,
    // whose EraseMetadata then finds no replica left to name.
    void evict_memory(const std::string &t, const std::string &k) {
        Obj &o = objects[t][k];
        o.r &= ~MEM;
        if (o.r) sync(t, k, o.r, o.r | MEM);
        else erase(t, k, 0);
    }
    void evict_disk(const std::string &t, const std::string &k) {  // EvictDiskReplica
        Obj &o = objects[t][k];
        unsigned prev = o.r;
        o.r &= ~DISK;
        sync(t, k, o.r, prev);
        if (!o.r) erase(t, k, 0);  // accessor.Erase(): the sync above said it
    }
    void add_replica(const std::string &t, const std::string &k, unsigned type) {
        Obj &o = objects[t][k];  // NotifyOffloadSuccess (disk), promotion (memory)
        unsigned prev = o.r;
        o.r |= type;
        sync(t, k, o.r, prev);
    }
    // UpsertStart: same size (case B) marks every completed replica
    // PROCESSING and syncs; a new size (case C) pops them and erases with
    // kPreserveOld, which syncs with the old media as the hint.  Either way
    // every medium is retracted until UpsertEnd.
    void upsert_start(const std::string &t, const std::string &k, bool in_place) {
        Obj &o = objects[t][k];
        unsigned prev = o.r;
        o.writing = in_place ? o.r : unsigned(MEM);
        o.r = 0;
        sync(t, k, 0, prev);
    }
    void upsert_end(const std::string &t, const std::string &k) {  // UpsertEnd -> PutEnd(ALL)
        Obj &o = objects[t][k];
        o.r |= o.writing;
        o.writing = 0;
        publish_stored(t, k, o.r);
    }
    // RemoveAll(tenant, force=true): each complete object through
    // EraseMetadata; an upsert in flight is skipped (not every replica
    // complete); `cleared` only if it saw an object and skipped none, and
    // the tenant's epoch is the one read before the scan
    // (PublishKvClearedIfEpochUnchanged).
    void remove_all(const std::string &t) {
        uint64_t entry_epoch = epoch[t];
        bool saw = false, skipped = false;
        auto objs = objects[t];
        for (auto &[k, o] : objs) {
            saw = true;
            if (o.writing) skipped = true;
            else erase(t, k, o.r);
        }
        if (!saw) return;
        if (skipped || epoch[t] != entry_epoch) {
            cleared_withheld[t]++;
            return;
        }
        pub->PublishCleared(t);
        cleared[t]++;
        for (auto &[k, m] : std::map<std::string, unsigned>(shown[t])) show(t, k, 0);
        exact[t] = true;
    }
    unsigned get(const std::string &t, const std::string &k) {
        auto it = objects[t].find(k);
        return it == objects[t].end() ? 0 : it->second.r;
    }
    bool writing(const std::string &t, const std::string &k) {
        auto it = objects[t].find(k);
        return it != objects[t].end() && it->second.writing;
    }
    bool exists(const std::string &t, const std::string &k) { return objects[t].count(k) != 0; }

    // One operation on (t, k), drawn as main's and conductor's are, with
    // the calls of 00390e6e; a key whose upsert is in flight gets its UpsertEnd.
    template <class Rng> void step(Rng &rng, const std::string &t, const std::string &k, bool disk) {
        unsigned c = get(t, k), r = rng() % 1000;
        if (writing(t, k)) {
            upsert_end(t, k);
            if (disk && !(get(t, k) & DISK)) put_end(t, k, DISK);
        } else if (r < 420) {  // a put of a new key: memory, and disk with --root_fs_dir, either order
            if (!exists(t, k)) {
                unsigned first = disk && (rng() & 1) ? DISK : MEM;
                put_end(t, k, first);
                if (disk) put_end(t, k, (MEM | DISK) & ~first);
            }
        } else if (r < 600) {
            if (c) remove(t, k);
        } else if (r < 720) {  // BatchEvict, and a tenant over its quota (EvictTenantMemoryForQuota)
            if (c & MEM) evict_memory(t, k);
        } else if (r < 780) {
            if (c & DISK) evict_disk(t, k);
        } else if (r < 850) {
            if (c == MEM) add_replica(t, k, DISK);
        } else if (r < 880) {
            if (c == DISK) add_replica(t, k, MEM);
        } else if (c) {
            upsert_start(t, k, c == MEM && (rng() & 1));
            if (rng() % 32) {  // else left in flight until the key is drawn again
                upsert_end(t, k);
                if (disk) put_end(t, k, DISK);
            }
        }
    }

    void write_truth(std::ofstream &f) {
        std::map<std::string, bool> ts;
        for (auto &[t, _] : objects) ts[t] = true;
        for (auto &[t, _] : shown) ts[t] = true;
        f << "{";
        bool first = true;
        for (auto &[t, _] : ts) {
            unsigned cpu = 0, dsk = 0, mcpu = 0, mdsk = 0, mobj = 0, inflight = 0;
            for (auto &[k, m] : shown[t]) cpu += (m & MEM) != 0, dsk += (m & DISK) != 0;
            for (auto &[k, o] : objects[t]) {
                mobj += o.r != 0, inflight += o.writing != 0;
                mcpu += (o.r & MEM) != 0, mdsk += (o.r & DISK) != 0;
            }
            f << (first ? "" : ",") << "\"" << t << "\":{\"objects\":" << shown[t].size() << ",\"cpu\":" << cpu
              << ",\"disk\":" << dsk << ",\"lives_whole\":" << lives[t].whole
              << ",\"lives_unseen\":" << lives[t].unseen << ",\"master\":{\"objects\":" << mobj
              << ",\"cpu\":" << mcpu << ",\"disk\":" << mdsk << ",\"in_flight\":" << inflight
              << "},\"unannounced\":" << unannounced[t] << ",\"cleared_published\":" << cleared[t]
              << ",\"cleared_withheld\":" << cleared_withheld[t] << "}";
            first = false;
        }
        f << "}\n";
    }
};
#else
struct Master {
    KvEventPublisher *pub;
    std::map<std::string, std::map<std::string, unsigned>> objects;  // tenant -> key -> replicas
    // Residency as a subscriber that joined before the first publish can know it: a
    // tenant is exact once a cleared said it holds nothing; a life begun while its
    // tenant was exact is seen whole when it ends.
    std::map<std::string, bool> exact;
    std::map<std::string, std::map<std::string, bool>> born_exact;
    std::map<std::string, Lives> lives;
    void begin(const std::string &t, const std::string &k) { born_exact[t][k] = exact[t]; }
    void end(const std::string &t, const std::string &k) {
        bool whole = born_exact[t][k];
        born_exact[t].erase(k);
        (whole ? lives[t].whole : lives[t].unseen)++;
    }

#ifdef DIALECT_CONDUCTOR
    static std::vector<std::string> media(unsigned r) {  // KvMediaForMetadata
        std::vector<std::string> m;
        if (r & MEM) m.push_back("cpu");
        if (r & DISK) m.push_back("disk");
        return m;
    }
    void put_end(const std::string &t, const std::string &k, unsigned, unsigned now) {
        if (!get(t, k)) begin(t, k);
        objects[t][k] = now;
        pub->PublishCommitted(k, media(now), t);  // PublishKvStored, L8986
    }
    void erase(const std::string &t, const std::string &k, unsigned before) {
        objects[t].erase(k);
        end(t, k);
        pub->PublishObjectRemoved(k, t, "", media(before));  // PublishKvRemoved, L9010
    }
    void evict(const std::string &t, const std::string &k, unsigned before, unsigned after) {
        if (after) objects[t][k] = after; else objects[t].erase(k), end(t, k);
        std::vector<std::string> prev = media(before);  // PublishKvRemovedAfterEvict, L9020
        pub->SyncObjectState(k, media(after), t, "", prev);
    }
    // RemoveAll(tenant, force=true): EraseMetadata publishes each object's
    // removal (L1752-1770 -> PublishKvRemoved), then a cleared, the tenant
    // being empty (L4737-4739 -> PublishKvCleared, L9039-9044).
    void remove_all(const std::string &t) {
        auto objs = objects[t];
        for (auto &[k, r] : objs) erase(t, k, r);
        exact[t] = true;
        pub->PublishCleared(t);
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
    // RemoveAll erases through EraseMetadata, which publishes nothing here
    // (L6666-6758); no cleared exists.  No subscriber sees these lives end.
    void remove_all(const std::string &t) { objects[t].clear(); }
#endif
    unsigned get(const std::string &t, const std::string &k) {
        auto it = objects[t].find(k);
        return it == objects[t].end() ? 0 : it->second;
    }
};
#endif

static void write_status(KvEventPublisher &p, const char *path) {
    auto st = p.GetStats();
    std::string tmp = std::string(path) + ".tmp";
    std::ofstream f(tmp);
    f << "{\"enabled\":true,\"published_batches\":" << st.published_batches
      << ",\"published_events\":" << st.published_events << ",\"dropped_events\":" << st.dropped_events
#ifdef MAIN_3818  // the guide's five fields, all GetStats() has
      << ",\"skipped_keyless_events\":" << st.skipped_keyless_events
#else
      << ",\"skipped_unparsed_keys\":" << st.skipped_unparsed_keys
#endif
#ifdef DIALECT_CONDUCTOR
      << ",\"invalid_event_hashes\":" << st.invalid_event_hashes
#endif
      << "}";
    f.close();
    std::rename(tmp.c_str(), path);
}

static long env_long(const char *name, long dflt) {
    const char *v = std::getenv(name);
    return v && *v ? std::atol(v) : dflt;
}

static void put_u32(std::FILE *f, uint32_t v) {
    unsigned char b[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16), (unsigned char)(v >> 8),
                          (unsigned char)v};
    std::fwrite(b, 1, 4, f);
}

// Receives until told to stop and then quiet for 200 ms; one record per message.
static void capture(void *zctx, const char *endpoint, const char *path, std::atomic<bool> *stop,
                    std::atomic<bool> *joined) {
    void *sub = zmq_socket(zctx, ZMQ_SUB);
    int hwm = 0, timeout = 200;
    zmq_setsockopt(sub, ZMQ_RCVHWM, &hwm, sizeof hwm);
    zmq_setsockopt(sub, ZMQ_RCVTIMEO, &timeout, sizeof timeout);
    zmq_setsockopt(sub, ZMQ_SUBSCRIBE, "", 0);
    zmq_connect(sub, endpoint);
    *joined = true;
    std::FILE *f = std::fopen(path, "wb");
    for (;;) {
        std::vector<std::string> frames;
        int more = 1;
        while (more) {
            zmq_msg_t msg;
            zmq_msg_init(&msg);
            if (zmq_msg_recv(&msg, sub, 0) < 0) {
                zmq_msg_close(&msg);
                break;
            }
            frames.emplace_back((const char *)zmq_msg_data(&msg), zmq_msg_size(&msg));
            more = zmq_msg_more(&msg);
            zmq_msg_close(&msg);
        }
        if (frames.empty()) {
            if (*stop) break;
            continue;
        }
        put_u32(f, (uint32_t)frames.size());
        for (auto &fr : frames) {
            put_u32(f, (uint32_t)fr.size());
            std::fwrite(fr.data(), 1, fr.size(), f);
        }
    }
    std::fclose(f);
    zmq_close(sub);
}

int main(int argc, char **argv) {
    if (argc < 6) {
        std::fprintf(stderr, "usage: driver ENDPOINT OPS RATE STATUS_FILE TRUTH_FILE [SEED]\n");
        return 2;
    }
    long ops = std::atol(argv[2]);
    double rate = std::atof(argv[3]);
    std::mt19937_64 rng(argc > 6 ? std::atoll(argv[6]) : 1);
    const long keys = env_long("DRIVER_KEYS", 2000), clear_every = env_long("DRIVER_CLEAR_EVERY", 0);
    const char *capture_file = std::getenv("DRIVER_CAPTURE");
    void *zctx = zmq_ctx_new();
    std::atomic<bool> cap_stop{false}, cap_joined{false};
    std::thread cap;
    if (capture_file) {  // joined before the publisher binds: the capture starts at sequence 1
        cap = std::thread(capture, zctx, argv[1], capture_file, &cap_stop, &cap_joined);
        while (!cap_joined) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    KvEventConfig cfg;
    cfg.enabled = true;
    cfg.bind_endpoint = argv[1];
    cfg.backend_id = "mooncake-master-1";
#ifdef MAIN_3818  // stamped on every event since #3818 (PublishBatch): a capture carries it
    cfg.model_name = "model-a";
    cfg.lora_name = "adapter-1";
    cfg.block_size = 16;
    cfg.additional_salt = "salt-1";
    cfg.dp_rank = 1;
#endif
    KvEventPublisher pub(cfg);
    Master m;
    m.pub = &pub;
    write_status(pub, argv[4]);
    std::this_thread::sleep_for(std::chrono::seconds(2));  // the subscriber joins
    const char *tenants[] = {"default", "tenant-1", "tenant-2", "tenant-3"};
    auto start = std::chrono::steady_clock::now();
    for (long i = 0; i < ops; i++) {
        std::string t = tenants[rng() % 4], k = "model-a/layer" + std::to_string(rng() % 40) + "/" +
                                                std::to_string(rng() % keys);
#ifdef MAIN_3818
        m.step(rng, t, k, rng() % 10 < 3);
#else
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
#endif
        if (clear_every && i % clear_every == clear_every - 1)
            m.remove_all(tenants[(i / clear_every) % 3]);
        if (i % 1000 == 999) write_status(pub, argv[4]);
        if (i % 50 == 49)
            std::this_thread::sleep_until(start + std::chrono::duration<double>((i + 1) / rate));
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));  // sent (LINGER is 0)
    write_status(pub, argv[4]);
    if (capture_file) {
        cap_stop = true;
        cap.join();
    }
    std::ofstream f(argv[5]);
#ifdef MAIN_3818
    m.write_truth(f);
#else
    f << "{";
    bool first = true;
    for (auto &[t, objs] : m.objects) {
        unsigned cpu = 0, dsk = 0;
        for (auto &[k, r] : objs) cpu += (r & MEM) != 0, dsk += (r & DISK) != 0;
        f << (first ? "" : ",") << "\"" << t << "\":{\"objects\":" << objs.size() << ",\"cpu\":" << cpu
          << ",\"disk\":" << dsk;
#ifdef DIALECT_CONDUCTOR
        f << ",\"lives_whole\":" << m.lives[t].whole << ",\"lives_unseen\":" << m.lives[t].unseen;
#endif
        f << "}";
        first = false;
    }
    f << "}\n";
#endif
    f.close();
    return 0;
}
