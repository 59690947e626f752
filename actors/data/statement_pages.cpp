#include "actors/data/statement_pages.hpp"

#include "protocols/common/json_writer.hpp"

namespace qf {

using phase = statement_state::phase;
using clock = statement_state::clock;

trino::query_state public_state(const statement_state& st, bool final) {
  switch (st.ph) {
    case phase::queued:
      return trino::query_state::queued;
    case phase::running:
      return trino::query_state::running;
    case phase::finished:
      return final ? trino::query_state::finished
                   : trino::query_state::running;
    case phase::failed:
      return trino::query_state::failed;
  }
  return trino::query_state::failed;
}

std::string uri(const statement_state& st, std::string_view path) {
  return st.spec.base_address + std::string{path} + st.spec.id;
}

row_batch take_rows(statement_state& st, size_t max) {
  row_batch page;
  page.width = st.columns.size();
  while (!st.buffer.empty() && page.rows() < max) {
    auto& front = st.buffer.front();
    auto available = front.rows() - st.front_offset;
    auto n = std::min(available, max - page.rows());
    auto first = front.cells.begin()
                 + static_cast<std::ptrdiff_t>(st.front_offset * front.width);
    auto last = first + static_cast<std::ptrdiff_t>(n * front.width);
    page.cells.insert(page.cells.end(), std::make_move_iterator(first),
                      std::make_move_iterator(last));
    st.front_offset += n;
    st.buffered_rows -= n;
    if (st.front_offset == front.rows()) {
      st.buffer.pop_front();
      st.front_offset = 0;
    }
  }
  return page;
}

std::string query_info(const statement_state& st) {
  std::string out = "{\"queryId\":";
  json_text::append_string(out, st.spec.id);
  out += ",\"state\":\"";
  switch (public_state(st, true)) {
    case trino::query_state::queued:
      out += "QUEUED";
      break;
    case trino::query_state::running:
      out += "RUNNING";
      break;
    case trino::query_state::finished:
      out += "FINISHED";
      break;
    case trino::query_state::failed:
      out += "FAILED";
      break;
  }
  out += "\",\"query\":";
  json_text::append_string(out, st.spec.sql);
  out += ",\"self\":";
  json_text::append_string(out, uri(st, "/v1/query/"));
  out += ",\"session\":{\"user\":";
  json_text::append_string(out, st.spec.session.user);
  out += "},\"resourceGroupId\":[";
  json_text::append_string(out, st.route.group);
  out += "],\"queryStats\":{\"elapsedTime\":\""
         + std::to_string(ms_between(st.created, clock::now())) + "ms\"";
  out += ",\"processedInputPositions\":" + std::to_string(st.rows) + "}";
  if (st.error) {
    out += ",\"errorCode\":{\"code\":" + std::to_string(st.error->code.code)
           + ",\"name\":\"" + st.error->code.name + "\",\"type\":\""
           + st.error->code.type + "\"}";
    out += ",\"failureInfo\":{\"message\":";
    json_text::append_string(out, st.error->message);
    out += '}';
  }
  out += '}';
  return out;
}

std::string trino_submitted_page(const std::string& base_address,
                                 const std::string& id, const std::string& slug) {
  trino::results_page page;
  page.id = id;
  page.info_uri = base_address + "/v1/query/" + id;
  page.next_uri = base_address + "/v1/statement/queued/" + id + "/" + slug + "/1";
  page.stats.state = trino::query_state::queued;
  return trino::encode(page);
}

} // namespace qf
