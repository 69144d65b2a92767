/* A small example for `llmopt predict` / `llmopt opt`: a few functions of the kind the
 * model was trained on (loops, branches, arrays). */
#include <stddef.h>

int table[64];

int sum_scaled(int n) {
  int s = 0;
  for (int i = 0; i < n; i++)
    s += table[i] * 3;
  return s;
}

static int clamp(int x, int lo, int hi) { return x < lo ? lo : (x > hi ? hi : x); }

int saturate_all(int *v, size_t n) {
  int changed = 0;
  for (size_t i = 0; i < n; i++) {
    int c = clamp(v[i], -128, 127);
    changed += c != v[i];
    v[i] = c;
  }
  return changed;
}

unsigned checksum(const unsigned char *p, size_t n) {
  unsigned h = 2166136261u;
  while (n--) {
    h ^= *p++;
    h *= 16777619u;
  }
  return h;
}

int classify(int c) {
  switch (c) {
  case 0: return 10;
  case 1: return 11;
  case 2: return 13;
  case 3: return 17;
  case 4: return 19;
  default: return -1;
  }
}
