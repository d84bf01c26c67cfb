// workspace::detach and workspace::leverage_to: copies of an array out of
// its workspace cycle (ndgc/workspace.hpp). They live in ops because they
// copy; choosing where the copy's storage comes from is the memory layer's
// thread state (ScopeOut, CurrentWorkspace).
#include <fmt/format.h>

#include "memory/workspace.hpp"
#include "ndgc/error.hpp"
#include "ndgc/workspace.hpp"

namespace ndgc::workspace {

NDArray detach(const NDArray& array, Site site) {
  ScopeOut out;
  return array.dup(site);
}

NDArray leverage_to(const NDArray& array, const std::string& name, Site site) {
  memory::Workspace* target = memory::find_open_workspace(name);
  if (!target)
    throw WorkspaceError(fmt::format(
        "workspace::leverage_to(array, '{}'): this thread has no open workspace '{}'; leverage_to copies into "
        "an enclosing workspace that is open (use detach() for ordinary memory)",
        name, name));
  memory::CurrentWorkspace in(target);
  return array.dup(site);
}

}  // namespace ndgc::workspace
