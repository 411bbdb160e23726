#include "io/strict_json.hpp"

#include <unordered_set>
#include <vector>

namespace swiglu::detail {

namespace {

using json = nlohmann::json;

// The first pass. (Not nlohmann's parser callback: its end_object scans the
// whole parent object, which makes an object of n keys cost O(n^2).)
class Checker final : public json::json_sax_t {
public:
    Checker(const StrictJsonRules& rules, const std::function<void(const std::string&)>& fail)
        : rules_(rules), fail_(fail) {}

    bool null() override { return true; }
    bool boolean(bool) override { return true; }
    bool number_integer(number_integer_t) override { return true; }
    bool number_unsigned(number_unsigned_t) override { return true; }
    bool number_float(number_float_t, const string_t&) override { return true; }
    bool string(string_t&) override { return true; }
    bool binary(binary_t&) override { return true; }  // never sent for JSON text
    bool start_object(std::size_t) override {
        enter();
        open_objects_.emplace_back();
        return true;
    }
    bool key(string_t& key) override {
        const bool top = open_objects_.size() == 1;
        if (top) inside_ = key;
        if (!open_objects_.back().insert(key).second)
            fail_(rules_.duplicate(key, top ? std::string() : inside_));
        return true;
    }
    bool end_object() override {
        open_objects_.pop_back();
        --depth_;
        return true;
    }
    bool start_array(std::size_t) override {
        enter();
        return true;
    }
    bool end_array() override {
        --depth_;
        return true;
    }
    bool parse_error(std::size_t, const std::string&,
                     const nlohmann::detail::exception& e) override {
        fail_(std::string(rules_.document) + " is not valid JSON: " + e.what());
        return false;
    }

private:
    void enter() {
        if (++depth_ > rules_.max_nesting)
            fail_(std::string(rules_.document) + " nests deeper than " +
                  std::to_string(rules_.max_nesting) + " levels; " + rules_.nesting_hint);
    }

    const StrictJsonRules& rules_;
    const std::function<void(const std::string&)>& fail_;
    int depth_ = 0;
    std::vector<std::unordered_set<std::string>> open_objects_;  // keys seen, per open object
    std::string inside_;  // the top-level key we are inside, for messages
};

}  // namespace

json parse_strict_json(std::string_view text, const StrictJsonRules& rules,
                       const std::function<void(const std::string&)>& fail) {
    try {
        Checker checker(rules, fail);
        json::sax_parse(text.begin(), text.end(), &checker);
        return json::parse(text.begin(), text.end());
    } catch (const json::exception& e) {
        fail(std::string(rules.document) + " is not valid JSON: " + e.what());
    }
    return {};  // not reached: fail throws
}

}  // namespace swiglu::detail
