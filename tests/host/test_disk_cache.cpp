/*
 * Host lane: the sharded disk cache (src/compile/disk_store.cpp,
 * disk_shards.cpp), compiled into the test and called directly with keys
 * chosen by the test (no NVRTC):
 *   - many entries across shards stay within the bound, exact LRU for a
 *     small bound, the newest entries kept for a bound of several units;
 *   - the per-shard records match the files, and heal when the stats file
 *     is deleted or corrupted, when files are deleted behind the cache's
 *     back, and when files are added (the periodic recount);
 *   - two processes writing to one shard at once keep the records exact
 *     (fork), with and without eviction;
 *   - manifests: round trip, Miss, each corruption is Corrupt (payload
 *     untouched), counted in the bound and evicted LRU with entries;
 *   - an entry with any one bit of its header or payload flipped is
 *     Corrupt, never a Hit (the header's output and arch included);
 *   - entries of the flat layout are moved into their shards in batches;
 *   - a shard directory that is a link or writable by others is refused.
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

extern "C" {
#include <cmocka.h>
}

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "compile/compile_stats.hpp"
#include "compile/disk_cache.hpp"
#include "log_stub.hpp"

using t4a::compile::Artifact;
using t4a::compile::compile_stats;
using t4a::compile::DiskConfig;
using t4a::compile::DiskEntry;
using t4a::compile::DiskRead;
using t4a::core::Digest;

namespace {

// A key in shard `shard`, distinct per serial.
Digest key_of(int shard, uint32_t serial) {
  std::string s = "key " + std::to_string(serial);
  Digest d = t4a::core::Sha256::of(s.data(), s.size());
  d[0] = static_cast<uint8_t>(shard);
  return d;
}

Digest any_key(uint32_t serial) {
  std::string s = "any " + std::to_string(serial);
  return t4a::core::Sha256::of(s.data(), s.size());
}

void remove_tree(const std::string &path) {
  DIR *d = opendir(path.c_str());
  if (d == nullptr) {
    (void)unlink(path.c_str()); // absent already is as good
    return;
  }
  while (struct dirent *e = readdir(d)) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    std::string p = path + "/" + e->d_name;
    struct stat st;
    if (lstat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
      remove_tree(p);
    else
      assert_int_equal(unlink(p.c_str()), 0);
  }
  closedir(d);
  assert_int_equal(rmdir(path.c_str()), 0);
}

DiskConfig fresh(const char *name, uint64_t max_bytes) {
  DiskConfig c;
  c.enabled = true;
  c.dir = std::string(T4A_TEST_BINARY_DIR) + "/disk-cache-units";
  (void)mkdir(c.dir.c_str(), 0700); // exists already is as good
  c.dir += std::string("/") + name;
  remove_tree(c.dir);
  c.max_bytes = max_bytes;
  return c;
}

// An artifact of `key` whose entry is 128 + image_bytes bytes.
Artifact artifact_of(const Digest &key, size_t image_bytes) {
  t4a::compile::Target t;
  t.output = T4A_COMPILE_CUBIN;
  t.arch = 90;
  return Artifact(key, t, std::string(image_bytes, 'i'), "", {});
}

void put(const DiskConfig &c, const Digest &key, size_t image_bytes) {
  std::string why;
  if (!t4a::compile::disk_write(c, artifact_of(key, image_bytes), &why))
    fail_msg("disk_write: %s", why.c_str());
}

bool exists(const std::string &path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

struct Totals {
  uint64_t bytes = 0, entries = 0;
};

// What the shard directories hold (entries and manifests).
Totals on_disk(const DiskConfig &c, int only_shard = -1) {
  Totals t;
  for (int s = 0; s < 256; ++s) {
    if (only_shard >= 0 && s != only_shard) continue;
    char name[8];
    snprintf(name, sizeof name, "/%02x", s);
    DIR *d = opendir((c.dir + name).c_str());
    if (d == nullptr) continue;
    while (struct dirent *e = readdir(d)) {
      size_t n = strlen(e->d_name);
      if (n != 69 || e->d_name[0] == '.') continue;
      struct stat st;
      std::string p = c.dir + name + "/" + e->d_name;
      assert_int_equal(lstat(p.c_str(), &st), 0);
      t.bytes += static_cast<uint64_t>(st.st_size);
      ++t.entries;
    }
    closedir(d);
  }
  return t;
}

// What shards.stats says (all shards, or one).
Totals recorded(const DiskConfig &c, int only_shard = -1) {
  Totals t;
  FILE *f = fopen((c.dir + "/shards.stats").c_str(), "rb");
  assert_non_null(f);
  uint64_t rec[4];
  for (int s = 0; s < 256 && fread(rec, sizeof rec, 1, f) == 1; ++s) {
    if (only_shard >= 0 && s != only_shard) continue;
    t.bytes += rec[0]; // little-endian host
    t.entries += rec[1];
  }
  fclose(f);
  return t;
}

void expect_records_match(const DiskConfig &c, int only_shard = -1) {
  Totals d = on_disk(c, only_shard), r = recorded(c, only_shard);
  if (d.bytes != r.bytes || d.entries != r.entries)
    fail_msg("records say %llu bytes in %llu files, the disk %llu in %llu",
             (unsigned long long)r.bytes, (unsigned long long)r.entries,
             (unsigned long long)d.bytes, (unsigned long long)d.entries);
}

void set_mtime(const std::string &path, time_t when) {
  struct timespec times[2] = {{when, 0}, {when, 0}};
  assert_int_equal(utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
}

// ---- bound and eviction ------------------------------------------------

// A small bound (one unit: the whole cache): exact LRU across shards.
void test_small_bound_exact_lru(void **) {
  const size_t image = 1000; // entries of 1128 bytes
  DiskConfig c = fresh("small-bound", 20 * 1128 + 500);
  uint64_t evicted = compile_stats().disk_evictions.get();
  for (uint32_t i = 0; i < 300; ++i) put(c, any_key(i), image);
  Totals t = on_disk(c);
  assert_true(t.bytes <= c.max_bytes);
  assert_true(compile_stats().disk_evictions.get() - evicted >= 280);
  // Cleaned to 90% of the bound, least recently written first: the
  // newest 17 are all there.
  for (uint32_t i = 300 - 17; i < 300; ++i)
    assert_true(exists(t4a::compile::disk_entry_path(c, any_key(i))));
  assert_false(exists(t4a::compile::disk_entry_path(c, any_key(0))));
  expect_records_match(c);
}

// A bound of two units (32 MiB): 1,500 entries of 32 KiB across all
// shards stay within it; the records match; the newest are kept.
void test_many_entries_across_shards(void **) {
  const size_t image = 32 * 1024 - 128;
  DiskConfig c = fresh("many", uint64_t{32} << 20);
  for (uint32_t i = 0; i < 1500; ++i) {
    put(c, any_key(i), image);
    if (i % 250 == 0) assert_true(on_disk(c).bytes <= c.max_bytes);
  }
  Totals t = on_disk(c);
  assert_true(t.bytes <= c.max_bytes);
  assert_true(t.entries >= 700); // cleaned to no less than 90% of a share
  for (uint32_t i = 1450; i < 1500; ++i)
    assert_true(exists(t4a::compile::disk_entry_path(c, any_key(i))));
  expect_records_match(c);
}

// ---- self-healing records ----------------------------------------------

void test_stats_file_heals(void **) {
  DiskConfig c = fresh("heal", 100 * 1128);
  for (uint32_t i = 0; i < 40; ++i) put(c, any_key(i), 1000);
  expect_records_match(c);
  // Deleted: recounted on the next write.
  assert_int_equal(unlink((c.dir + "/shards.stats").c_str()), 0);
  put(c, any_key(1000), 1000);
  expect_records_match(c);
  // Garbage over every record: recounted too.
  {
    std::vector<char> junk(256 * 32, 0x5a);
    FILE *f = fopen((c.dir + "/shards.stats").c_str(), "r+b");
    assert_non_null(f);
    assert_int_equal(fwrite(junk.data(), 1, junk.size(), f), junk.size());
    fclose(f);
  }
  put(c, any_key(1001), 1000);
  expect_records_match(c);
  // Files deleted behind the cache's back: the records now count more than
  // there is; the next write that looks full recounts, evicting nothing
  // that the real size does not require.
  for (uint32_t i = 0; i < 30; ++i)
    (void)unlink(t4a::compile::disk_entry_path(c, any_key(i)).c_str());
  for (uint32_t i = 2000; i < 2060; ++i) put(c, any_key(i), 1000);
  assert_true(on_disk(c).bytes <= c.max_bytes);
  expect_records_match(c);
  for (uint32_t i = 2000; i < 2060; ++i)
    assert_true(exists(t4a::compile::disk_entry_path(c, any_key(i))));
}

// Files added behind the cache's back (a shard that is never full): the
// periodic recount, every 512 writes of a shard, finds them.
void test_periodic_recount(void **) {
  DiskConfig c = fresh("recount", uint64_t{1} << 30);
  put(c, key_of(7, 0), 100);
  std::string src = t4a::compile::disk_entry_path(c, key_of(7, 0));
  std::string copy = t4a::compile::disk_entry_path(c, key_of(7, 999999));
  std::string cmd = "cp " + src + " " + copy;
  assert_int_equal(system(cmd.c_str()), 0);
  assert_true(recorded(c, 7).entries != on_disk(c, 7).entries);
  // The first write's unit scan reset the shard's count: 512 more.
  for (uint32_t i = 1; i <= 512; ++i) put(c, key_of(7, i), 100);
  expect_records_match(c, 7);
}

// ---- two processes, one shard ------------------------------------------

void write_from_two_processes(const DiskConfig &c, int shard) {
  pid_t pids[2];
  for (int p = 0; p < 2; ++p) {
    pids[p] = fork();
    assert_true(pids[p] >= 0);
    if (pids[p] != 0) continue;
    std::string why;
    // Half the keys are written by both (replacements), half by one.
    for (uint32_t i = 0; i < 300; ++i) {
      uint32_t serial = i % 2 == 0 ? i : i + 100000 * (p + 1);
      if (!t4a::compile::disk_write(
              c, artifact_of(key_of(shard, serial), 500 + i % 7), &why))
        _exit(1);
    }
    _exit(0);
  }
  for (pid_t pid : pids) {
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
}

void test_two_processes_one_shard(void **) {
  DiskConfig c = fresh("two-writers", uint64_t{1} << 30);
  write_from_two_processes(c, 0x42);
  assert_int_equal(on_disk(c, 0x42).entries, 150 + 2 * 150);
  expect_records_match(c, 0x42);
  // With eviction under way (a bound below what they write).
  c = fresh("two-writers-bound", 200 * 700);
  write_from_two_processes(c, 0x42);
  assert_true(on_disk(c).bytes <= c.max_bytes);
  expect_records_match(c);
}

// ---- manifests ---------------------------------------------------------

void test_manifest_round_trip(void **) {
  DiskConfig c = fresh("manifest", uint64_t{1} << 20);
  Digest key = any_key(1);
  std::string out = "untouched", why;
  assert_int_equal(t4a::compile::disk_get_manifest(c, key, &out, &why),
                   DiskRead::Miss);
  std::string payload("deps\0with a NUL", 15);
  assert_true(t4a::compile::disk_put_manifest(c, key, payload, &why));
  assert_int_equal(t4a::compile::disk_get_manifest(c, key, &out, &why),
                   DiskRead::Hit);
  assert_true(out == payload);
  // Empty payloads too; an artifact entry of the same key is another file.
  assert_true(t4a::compile::disk_put_manifest(c, any_key(2), "", &why));
  assert_int_equal(t4a::compile::disk_get_manifest(c, any_key(2), &out, &why),
                   DiskRead::Hit);
  assert_true(out.empty());
  DiskEntry e;
  assert_int_equal(t4a::compile::disk_read(c, key, &e, &why), DiskRead::Miss);
  // Larger than the bound: refused.
  assert_false(t4a::compile::disk_put_manifest(
      c, any_key(3), std::string(c.max_bytes, 'x'), &why));
  expect_records_match(c);
}

void test_manifest_corrupt(void **) {
  DiskConfig c = fresh("manifest-corrupt", uint64_t{1} << 20);
  Digest key = any_key(7);
  std::string why, path = t4a::compile::disk_manifest_path(c, key);
  const std::string payload(300, 'p');
  const char *cases[] = {"flip payload", "flip magic", "flip key",
                         "truncate",     "append",     "header only"};
  for (const char *what : cases) {
    assert_true(t4a::compile::disk_put_manifest(c, key, payload, &why));
    FILE *f = fopen(path.c_str(), "r+b");
    assert_non_null(f);
    long at = !strcmp(what, "flip magic") ? 0
              : !strcmp(what, "flip key") ? 20
                                          : 96 + 150;
    if (!strcmp(what, "truncate")) {
      fclose(f);
      assert_int_equal(truncate(path.c_str(), 96 + 299), 0);
    } else if (!strcmp(what, "header only")) {
      fclose(f);
      assert_int_equal(truncate(path.c_str(), 50), 0);
    } else if (!strcmp(what, "append")) {
      assert_int_equal(fseek(f, 0, SEEK_END), 0);
      fputc('x', f);
      fclose(f);
    } else {
      assert_int_equal(fseek(f, at, SEEK_SET), 0);
      int ch = fgetc(f);
      assert_int_equal(fseek(f, at, SEEK_SET), 0);
      fputc(ch ^ 0x40, f);
      fclose(f);
    }
    std::string out = "untouched";
    why.clear();
    if (t4a::compile::disk_get_manifest(c, key, &out, &why) !=
        DiskRead::Corrupt)
      fail_msg("%s: not corrupt", what);
    assert_true(out == "untouched");
    assert_true(why.find(path) != std::string::npos);
  }
  // A manifest under another key's name (the key inside differs).
  assert_true(t4a::compile::disk_put_manifest(c, key, payload, &why));
  std::string other = t4a::compile::disk_manifest_path(c, any_key(8));
  (void)mkdir(other.substr(0, other.rfind('/')).c_str(), 0700);
  assert_int_equal(link(path.c_str(), other.c_str()), 0);
  std::string out;
  assert_int_equal(t4a::compile::disk_get_manifest(c, any_key(8), &out, &why),
                   DiskRead::Corrupt);
  assert_true(why.find("key differs") != std::string::npos);
}

// Manifests count in the bound and are evicted least recently used with
// artifact entries; a hit refreshes one.
void test_manifest_in_bound_and_lru(void **) {
  const size_t image = 1000;      // entry: 1128 bytes
  const std::string m(1032, 'm'); // manifest: 1128 bytes
  DiskConfig c = fresh("manifest-lru", 4 * 1128 + 100);
  std::string why, out;
  time_t now = time(nullptr);
  assert_true(t4a::compile::disk_put_manifest(c, any_key(0), m, &why));
  assert_true(t4a::compile::disk_put_manifest(c, any_key(1), m, &why));
  put(c, any_key(2), image);
  put(c, any_key(3), image);
  set_mtime(t4a::compile::disk_manifest_path(c, any_key(0)), now - 400);
  set_mtime(t4a::compile::disk_manifest_path(c, any_key(1)), now - 300);
  set_mtime(t4a::compile::disk_entry_path(c, any_key(2)), now - 200);
  set_mtime(t4a::compile::disk_entry_path(c, any_key(3)), now - 100);
  // A hit makes manifest 0 the most recently used.
  assert_int_equal(t4a::compile::disk_get_manifest(c, any_key(0), &out, &why),
                   DiskRead::Hit);
  expect_records_match(c);
  uint64_t evicted = compile_stats().disk_evictions.get();
  put(c, any_key(4), image); // 5 x 1128 > the bound: down to 90% of it
  assert_int_equal(compile_stats().disk_evictions.get() - evicted, 2);
  assert_true(exists(t4a::compile::disk_manifest_path(c, any_key(0))));
  assert_false(exists(t4a::compile::disk_manifest_path(c, any_key(1))));
  assert_false(exists(t4a::compile::disk_entry_path(c, any_key(2))));
  assert_true(exists(t4a::compile::disk_entry_path(c, any_key(3))));
  assert_true(exists(t4a::compile::disk_entry_path(c, any_key(4))));
  expect_records_match(c);
}

// ---- the flat layout ---------------------------------------------------

void test_flat_layout_moved_into_shards(void **) {
  DiskConfig c = fresh("flat", uint64_t{1} << 30);
  (void)mkdir(c.dir.c_str(), 0700); // made again by fresh's caller
  const int n = 300;                // more than two batches of 128
  for (int i = 0; i < n; ++i) {
    Digest k = any_key(static_cast<uint32_t>(i));
    auto a = artifact_of(k, 200);
    auto e = t4a::compile::disk_entry_encode(k, a.target(), a.image(), "", {});
    std::string p = c.dir + "/" + t4a::core::to_hex(k) + ".t4ac";
    FILE *f = fopen(p.c_str(), "wb");
    assert_non_null(f);
    fwrite(e.header.data(), 1, e.header.size(), f);
    fwrite(a.image().data(), 1, a.image().size(), f);
    fclose(f);
  }
  std::string stale = c.dir + "/.old.123.0.tmp";
  fclose(fopen(stale.c_str(), "wb"));
  set_mtime(stale, time(nullptr) - 3600);
  for (uint32_t w = 0; w < 3; ++w) put(c, any_key(100000 + w), 200);
  assert_false(exists(stale));
  assert_true(exists(c.dir + "/flat-layout-drained"));
  for (int i = 0; i < n; ++i) {
    Digest k = any_key(static_cast<uint32_t>(i));
    assert_false(exists(c.dir + "/" + t4a::core::to_hex(k) + ".t4ac"));
    DiskEntry e;
    std::string why;
    assert_int_equal(t4a::compile::disk_read(c, k, &e, &why), DiskRead::Hit);
  }
  assert_int_equal(on_disk(c).entries, n + 3);
  expect_records_match(c);
}

// ---- entry integrity ---------------------------------------------------

// Every single-bit flip of an entry's bytes is refused. Before format 3
// the header's output and arch were outside the checksum: a flipped arch
// byte gave a Hit reporting another target.
void test_entry_bit_flips_are_corrupt(void **) {
  Digest k = key_of(0x21, 7);
  auto a = artifact_of(k, 300);
  auto e = t4a::compile::disk_entry_encode(k, a.target(), a.image(), "log",
                                           {"_Z1fv", "_Z1gv"});
  std::vector<uint8_t> file(e.header.begin(), e.header.end());
  file.insert(file.end(), a.image().begin(), a.image().end());
  const char log[] = "log";
  file.insert(file.end(), log, log + 3);
  file.insert(file.end(), e.names.begin(), e.names.end());
  assert_int_equal(file.size(), e.total_bytes);
  DiskEntry d;
  const char *why = nullptr;
  assert_int_equal(
      t4a::compile::disk_entry_parse(file.data(), file.size(), k, &d, &why),
      DiskRead::Hit);
  assert_int_equal(d.target.arch, a.target().arch);
  for (size_t i = 0; i < file.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::vector<uint8_t> bad = file;
      bad[i] ^= static_cast<uint8_t>(1u << bit);
      why = nullptr;
      DiskRead r =
          t4a::compile::disk_entry_parse(bad.data(), bad.size(), k, &d, &why);
      if (r != DiskRead::Corrupt)
        fail_msg("byte %zu bit %d flipped: not Corrupt", i, bit);
      assert_non_null(why);
    }
  }
}

// ---- shard directory trust ---------------------------------------------

void test_untrusted_shard_directory(void **) {
  DiskConfig c = fresh("shard-trust", uint64_t{1} << 20);
  Digest k = key_of(0x11, 1);
  put(c, k, 100);
  std::string shard = c.dir + "/11", why;
  DiskEntry e;
  assert_int_equal(chmod(shard.c_str(), 0777), 0);
  assert_int_equal(t4a::compile::disk_read(c, k, &e, &why), DiskRead::Corrupt);
  assert_true(why.find("shard directory") != std::string::npos);
  assert_false(
      t4a::compile::disk_write(c, artifact_of(key_of(0x11, 2), 100), &why));
  assert_int_equal(chmod(shard.c_str(), 0700), 0);
  assert_int_equal(t4a::compile::disk_read(c, k, &e, &why), DiskRead::Hit);
  // A link in a shard's place is not followed.
  std::string elsewhere = c.dir + "/elsewhere";
  assert_int_equal(rename(shard.c_str(), elsewhere.c_str()), 0);
  assert_int_equal(symlink(elsewhere.c_str(), shard.c_str()), 0);
  assert_int_equal(t4a::compile::disk_read(c, k, &e, &why), DiskRead::Corrupt);
  assert_false(
      t4a::compile::disk_write(c, artifact_of(key_of(0x11, 3), 100), &why));
}

} // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_small_bound_exact_lru),
      cmocka_unit_test(test_many_entries_across_shards),
      cmocka_unit_test(test_stats_file_heals),
      cmocka_unit_test(test_periodic_recount),
      cmocka_unit_test(test_two_processes_one_shard),
      cmocka_unit_test(test_manifest_round_trip),
      cmocka_unit_test(test_manifest_corrupt),
      cmocka_unit_test(test_manifest_in_bound_and_lru),
      cmocka_unit_test(test_entry_bit_flips_are_corrupt),
      cmocka_unit_test(test_flat_layout_moved_into_shards),
      cmocka_unit_test(test_untrusted_shard_directory),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
