// The gRPC seam: one channel + WorkflowService stub for a namespace, and the call helper that
// adds credentials and deadlines and turns gRPC statuses into core::Error. Thread-safe.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>

#include "codeact/core/result.hpp"
#include "codeact/temporal/client.hpp"
#include "temporal/api/workflowservice/v1/service.grpc.pb.h"

namespace codeact::temporal::internal {

namespace wsv1 = ::temporal::api::workflowservice::v1;

core::Error error_from_grpc(const grpc::Status& status, std::string_view what);

class ServiceConnection {
 public:
  static core::Result<std::shared_ptr<ServiceConnection>> create(ClientOptions options);

  const ClientOptions& options() const { return options_; }
  const std::string& ns() const { return options_.ns; }
  const std::string& identity() const { return options_.identity; }
  wsv1::WorkflowService::Stub& stub() { return *stub_; }
  grpc::Channel& channel() { return *channel_; }

  // Adds the API key and the deadline (0 = the default rpc timeout).
  void prepare(grpc::ClientContext& ctx,
               std::chrono::milliseconds timeout = std::chrono::milliseconds(0)) const;

  // Calls `method` on the stub. `ctx` may be given by the caller (to cancel it from elsewhere);
  // it must be fresh and is prepared here.
  template <typename Req, typename Resp>
  core::Result<Resp> call(grpc::Status (wsv1::WorkflowService::Stub::*method)(grpc::ClientContext*,
                                                                              const Req&, Resp*),
                          const Req& request, std::string_view what,
                          std::chrono::milliseconds timeout = std::chrono::milliseconds(0),
                          grpc::ClientContext* ctx = nullptr) {
    grpc::ClientContext local;
    grpc::ClientContext* c = ctx ? ctx : &local;
    prepare(*c, timeout);
    Resp response;
    grpc::Status status = ((*stub_).*method)(c, request, &response);
    if (!status.ok()) return error_from_grpc(status, what);
    return response;
  }

 private:
  ClientOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<wsv1::WorkflowService::Stub> stub_;
};

}  // namespace codeact::temporal::internal
