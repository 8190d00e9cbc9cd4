// A reflection client by hand, for server tests: no reflection stubs needed.
#pragma once

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <string>
#include <vector>

namespace kerneleval {

// grpc.reflection.v1alpha ServerReflectionInfo with list_services, by hand
// (raw bytes over the generic stub): the service names in the answer.
inline std::string ListServicesByReflection(const std::string& target) {
  auto channel = grpc::CreateChannel(target, grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  grpc::CompletionQueue queue;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  auto call = stub.PrepareCall(
      &context, "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", &queue);
  const auto wait = [&queue] {
    void* tag = nullptr;
    bool ok = false;
    return queue.Next(&tag, &ok) && ok;
  };
  std::string answer;
  call->StartCall(reinterpret_cast<void*>(1));
  if (!wait()) return answer;
  const std::string request("\x3a\x00", 2);  // field 7 (list_services) = ""
  grpc::Slice slice(request);
  grpc::ByteBuffer buffer(&slice, 1);
  call->Write(buffer, reinterpret_cast<void*>(2));
  if (!wait()) return answer;
  call->WritesDone(reinterpret_cast<void*>(3));
  if (!wait()) return answer;
  grpc::ByteBuffer response;
  call->Read(&response, reinterpret_cast<void*>(4));
  if (wait()) {
    std::vector<grpc::Slice> slices;
    if (response.Dump(&slices).ok()) {
      for (const auto& part : slices) {
        answer.append(reinterpret_cast<const char*>(part.begin()), part.size());
      }
    }
  }
  grpc::Status status;
  call->Finish(&status, reinterpret_cast<void*>(5));
  wait();
  return answer;
}

}  // namespace kerneleval
