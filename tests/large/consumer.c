/* Reads every embedded blob through the generated address table, in a
   program linked with the default (small) code model.  Each blob begins
   and ends with a marker naming its index; the last one lies past 2 GiB
   from the code. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kpack_internal.h"

extern const kpack_blob big_kpack_blobs[];

int main(int argc, char** argv) {
  int count = argc > 1 ? atoi(argv[1]) : 0;
  uint64_t total = 0;
  int bad = 0;
  for (int i = 0; i < count; ++i) {
    const kpack_blob* b = &big_kpack_blobs[i];
    char head[17], tail[17], want[17];
    snprintf(want, sizeof want, "KPACKBLOB%07d", i);
    memcpy(head, b->data, 16);
    memcpy(tail, (const char*)b->data + b->size - 16, 16);
    head[16] = tail[16] = 0;
    if (strcmp(head, want) || strcmp(tail, want)) {
      printf("blob %d: markers '%s' '%s', want '%s'\n", i, head, tail, want);
      bad = 1;
    }
    total += b->size;
  }
  long long distance = (long long)((const char*)big_kpack_blobs[count - 1].data - (const char*)(uintptr_t)&main);
  printf("%d blobs, %llu bytes; the last blob starts %+lld bytes from main\n", count, (unsigned long long)total,
         distance);
  if (distance < (2ll << 30) && distance > -(2ll << 30)) {
    printf("the last blob is within 2 GiB of the code: the test proves nothing\n");
    bad = 1;
  }
  return bad;
}
