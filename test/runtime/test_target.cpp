// Tests of the target descriptions: lookup and the numbers taken from
// HARDWARE.md.
#include "runtime/program/Target.h"

#include <catch2/catch.hpp>

using namespace neuron::runtime;

TEST_CASE("findTarget knows trn1, trn2, trn2-lnc2, trn3 and trn3-lnc2", "[target]") {
  CHECK(targetNames() ==
        std::vector<std::string>{"trn1", "trn2", "trn2-lnc2", "trn3", "trn3-lnc2"});
  for (const std::string &name : targetNames()) {
    const Target *t = findTarget(name);
    REQUIRE(t);
    CHECK(t->name == name);
    CHECK(t->partitions == 128);
    CHECK(t->psumBytesPerPartition == 16 * 1024);
    CHECK(t->psumBanks * t->psumBankBytes == t->psumBytesPerPartition);
    CHECK(t->matmulMaxN * 4 == t->psumBankBytes); // one bank of fp32
    CHECK(t->dmaQueues == 16);
    // The Tensor engine peak follows from 128x128 MACs at its clock.
    CHECK(128 * 128 * 2 * t->tensorGhz / 1000 ==
          Approx(t->tensorPeakBf16Tflops).epsilon(0.01));
  }
  CHECK(findTarget("trn4") == nullptr);
  CHECK(findTarget("") == nullptr);
  CHECK(&defaultTarget() == findTarget("trn2"));
}

TEST_CASE("per-generation numbers", "[target]") {
  const Target &t1 = *findTarget("trn1");
  const Target &t2 = *findTarget("trn2");
  const Target &t3 = *findTarget("trn3");
  CHECK(t1.coreName == "NC-v2");
  CHECK(t2.coreName == "NC-v3");
  CHECK(t3.coreName == "NC-v4");
  CHECK(t1.sbufBytesPerPartition == 192 * 1024);
  CHECK(t2.sbufBytesPerPartition == 224 * 1024);
  CHECK(t3.sbufBytesPerPartition * 128 == 32L * 1024 * 1024);
  CHECK(t1.tensorGhz == 2.8);
  CHECK(t2.tensorGhz == 2.4);
  CHECK(t2.vectorGhz == 0.96);
  CHECK(t3.vectorGhz == 1.2);
  CHECK(t1.dmaBytesPerNsPerQueue == 17);
  CHECK(t2.dmaBytesPerNsPerQueue == 23);
  CHECK(t3.dmaBytesPerNsPerQueue == 33);
  CHECK(t1.hbmBytesPerNs == Approx(410));
  CHECK(t2.hbmBytesPerNs == Approx(362.5));
  CHECK(t3.hbmBytesPerNs == Approx(612.5));
  CHECK(t1.sharedSbufPsumPorts);
  CHECK_FALSE(t2.sharedSbufPsumPorts);
  CHECK_FALSE(t3.sharedSbufPsumPorts);
  CHECK(t2.tensorPeakFp32Tflops == 20);
}
