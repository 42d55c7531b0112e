// load_temporal_credentials and resolve_temporal: the temporal.tls* and temporal.api_key settings
// as a configured cluster gets them, and the errors a user sees for files that do not fit.
#include "codeact/durable/endpoint.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace codeact::durable {
namespace {

namespace fs = std::filesystem;

constexpr const char* kPem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

class EndpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("codeact-endpoint-test-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return (dir_ / name).string();
  }
  fs::path dir_;
};

TEST_F(EndpointTest, FilesAreReadAndDescribedWithoutTheKey) {
  core::TemporalTlsConfig c;
  c.ca_file = write("ca.pem", kPem);
  c.cert_file = write("client.pem", kPem);
  c.key_file = write("client.key", "-----BEGIN PRIVATE KEY-----\nx\n-----END PRIVATE KEY-----\n");
  c.api_key = "very-secret";
  auto cr = load_temporal_credentials(c);
  ASSERT_TRUE(cr.ok()) << cr.error().to_string();
  EXPECT_TRUE(cr->tls);
  EXPECT_EQ(cr->root_certs_pem, kPem);
  EXPECT_EQ(cr->cert_chain_pem, kPem);
  EXPECT_NE(cr->private_key_pem.find("PRIVATE KEY"), std::string::npos);
  EXPECT_EQ(cr->describe(), "mTLS (client certificate), API key");

  core::TemporalTlsConfig key_only;
  key_only.api_key = "k";
  EXPECT_EQ(load_temporal_credentials(key_only)->describe(), "TLS, API key");
  EXPECT_EQ(load_temporal_credentials(core::TemporalTlsConfig{})->describe(), "plain");
}

TEST_F(EndpointTest, AnUnreadableFileIsAnErrorNamingTheKeyAndTheFile) {
  core::TemporalTlsConfig c;
  c.ca_file = (dir_ / "missing-ca.pem").string();
  auto cr = load_temporal_credentials(c);
  ASSERT_FALSE(cr.ok());
  EXPECT_EQ(cr.error().code(), core::Code::kInvalidArgument);
  EXPECT_NE(cr.error().message().find("temporal.tls_ca_file (TEMPORAL_TLS_CA)"), std::string::npos)
      << cr.error().message();
  EXPECT_NE(cr.error().message().find(c.ca_file), std::string::npos) << cr.error().message();

  c.ca_file = write("not-pem.txt", "hello");
  cr = load_temporal_credentials(c);
  ASSERT_FALSE(cr.ok());
  EXPECT_NE(cr.error().message().find("holds no PEM block"), std::string::npos)
      << cr.error().message();
}

TEST_F(EndpointTest, ACertificateWithoutItsKeyAndTlsOffWithFilesAreErrors) {
  core::TemporalTlsConfig c;
  c.cert_file = write("client.pem", kPem);
  auto cr = load_temporal_credentials(c);
  ASSERT_FALSE(cr.ok());
  EXPECT_NE(cr.error().message().find("temporal.tls_cert_file (TEMPORAL_TLS_CERT) is set"),
            std::string::npos)
      << cr.error().message();
  EXPECT_NE(cr.error().message().find("temporal.tls_key_file"), std::string::npos);

  core::TemporalTlsConfig off;
  off.tls = false;
  off.ca_file = write("ca.pem", kPem);
  cr = load_temporal_credentials(off);
  ASSERT_FALSE(cr.ok());
  EXPECT_NE(cr.error().message().find("temporal.tls (TEMPORAL_TLS) is false"), std::string::npos)
      << cr.error().message();

  // tls: false with an API key alone is allowed: the key goes in clear (a proxy on loopback).
  core::TemporalTlsConfig clear;
  clear.tls = false;
  clear.api_key = "k";
  auto plain = load_temporal_credentials(clear);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->describe(), "plain, API key");
}

TEST_F(EndpointTest, AConfiguredServerGetsTheCredentialsTheFlagToo) {
  EndpointRequest req;
  req.flag = "grpc://t.example:7233";
  req.tls.api_key = "k";
  auto e = resolve_temporal(req, nullptr);
  ASSERT_TRUE(e.ok()) << e.error().to_string();
  EXPECT_EQ(e->address, "t.example:7233");
  EXPECT_TRUE(e->credentials.tls);
  EXPECT_EQ(e->credentials.api_key, "k");

  req.tls.cert_file = (dir_ / "nope.pem").string();
  req.tls.key_file = (dir_ / "nope.key").string();
  auto bad = resolve_temporal(req, nullptr);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("temporal.tls_cert_file"), std::string::npos)
      << bad.error().message();
}

}  // namespace
}  // namespace codeact::durable
