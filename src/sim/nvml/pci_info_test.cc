#include "sim/nvml/pci_info.h"

#include <gtest/gtest.h>

namespace fgpu::sim::nvml {
namespace {

TEST(PciInfoTest, ParsesTheThreeAcceptedForms) {
  EXPECT_EQ(ParsePciBusId("00000000:9A:00.0"), (PciAddress{0, 0x9A, 0, 0}));
  EXPECT_EQ(ParsePciBusId("0001:1b:1f.7"), (PciAddress{1, 0x1B, 0x1F, 7}));
  EXPECT_EQ(ParsePciBusId("ffffffff:ff:1f"), (PciAddress{0xFFFFFFFF, 0xFF, 0x1F, 0}));
  EXPECT_EQ(ParsePciBusId("9a:00.0"), (PciAddress{0, 0x9A, 0, 0}));
}

TEST(PciInfoTest, RejectsMalformedIds) {
  for (const char* bad : {"", "9a:00", "1:2:3:4.0", "100000000:00:00.0", "0:100:00.0", "0:00:20.0", "0:00:00.8",
                          "0:00:00.", ":00:00.0", "0:0g:00.0", "0:00:00.0.0", "0:00:00.00", " 0:00:00.0"}) {
    EXPECT_FALSE(ParsePciBusId(bad).has_value()) << '"' << bad << '"';
  }
}

TEST(PciInfoTest, FillsV3Fields) {
  DeviceSpec spec;
  spec.pci_bus_id = "0001ABCD:1C:03.0";
  nvmlPciInfo_t pci{};
  ASSERT_TRUE(FillPciInfo(spec, &pci));
  EXPECT_STREQ(pci.busId, "0001ABCD:1C:03.0");
  EXPECT_STREQ(pci.busIdLegacy, "ABCD:1C:03.0") << "the legacy field keeps 16 bits of domain";
  EXPECT_EQ(pci.domain, 0x0001ABCDu);
  EXPECT_EQ(pci.bus, 0x1Cu);
  EXPECT_EQ(pci.device, 3u);
  EXPECT_EQ(pci.pciDeviceId, 0x233010DEu) << "the default spec is an H100 80GB HBM3";

  spec.name = "Some Future GPU";
  ASSERT_TRUE(FillPciInfo(spec, &pci));
  EXPECT_EQ(pci.pciDeviceId, 0x000010DEu) << "unknown products get device id 0, never a guess";

  spec.pci_bus_id = "garbage";
  EXPECT_FALSE(FillPciInfo(spec, &pci));
}

}  // namespace
}  // namespace fgpu::sim::nvml
