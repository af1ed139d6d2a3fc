// Rule sets: ordered include/exclude rules, first match wins, a default; JSON and
// one-line forms; bad rule sets rejected with the source, the position and the reason.
#include "martini/filters/glob.h"
#include "martini/filters/rule_set.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

using namespace Martini::MPI;
using martini::filters::GlobMatch;
using martini::filters::RuleSet;

namespace {

bool Method(const RuleSet &r, const char *cls, const char *method, const char *sig = "()V",
            EMethodAccessType access = MAT_PACKAGE_API) {
    return r.AcceptsMethod(cls, method, sig, access);
}

}  // namespace

TEST(Glob, StarAndQuestionMark) {
    EXPECT_TRUE(GlobMatch("*", ""));
    EXPECT_TRUE(GlobMatch("com.acme.*", "com.acme.Foo.bar"));
    EXPECT_FALSE(GlobMatch("com.acme.*", "com.acmex.Foo"));
    EXPECT_TRUE(GlobMatch("*.get?", "a.B.getX"));
    EXPECT_FALSE(GlobMatch("*.get?", "a.B.getXY"));
    EXPECT_TRUE(GlobMatch("a*b*c", "aXbYbZc"));
    EXPECT_FALSE(GlobMatch("a*b*c", "aXbYbZ"));
    EXPECT_TRUE(GlobMatch("**x", "x"));
}

TEST(RuleSetLine, FirstMatchWinsThenTheDefault) {
    RuleSet r;
    ASSERT_EQ(r.ParseLine("-com.acme.internal.*|+com.acme.*"), "");
    EXPECT_FALSE(r.DefaultInclude());  // a rule includes: the rest is out
    EXPECT_TRUE(Method(r, "com.acme.Shop", "buy"));
    EXPECT_FALSE(Method(r, "com.acme.internal.Cache", "get"));
    EXPECT_FALSE(Method(r, "java.util.HashMap", "get"));
}

TEST(RuleSetLine, OnlyExcludesMeansIncludeTheRest) {
    RuleSet r;
    ASSERT_EQ(r.ParseLine("-*.toString|-*.hashCode"), "");
    EXPECT_TRUE(r.DefaultInclude());
    EXPECT_FALSE(Method(r, "a.B", "toString"));
    EXPECT_TRUE(Method(r, "a.B", "equals"));
}

TEST(RuleSetLine, ExplicitDefault) {
    RuleSet r;
    ASSERT_EQ(r.ParseLine("+com.acme.*|default=include"), "");
    EXPECT_TRUE(Method(r, "java.lang.String", "length"));
}

TEST(RuleSetLine, SignatureAndAccess) {
    RuleSet r;
    ASSERT_EQ(r.ParseLine("+*.get*()*@package_api|+*.run(I)V@package_internal/class_internal"), "");
    EXPECT_TRUE(Method(r, "a.B", "getX", "()I", MAT_PACKAGE_API));
    EXPECT_FALSE(Method(r, "a.B", "getX", "(I)I", MAT_PACKAGE_API));      // signature
    EXPECT_FALSE(Method(r, "a.B", "getX", "()I", MAT_CLASS_INTERNAL));    // access
    EXPECT_TRUE(Method(r, "a.B", "run", "(I)V", MAT_CLASS_INTERNAL));
    EXPECT_FALSE(Method(r, "a.B", "run", "(I)V", MAT_PACKAGE_API));
}

TEST(RuleSetLine, ClassesForHeapAndMonitors) {
    RuleSet r;
    ASSERT_EQ(r.ParseLine("+shop.*|+int[]|-*.toString()*"), "");
    EXPECT_TRUE(r.AcceptsClass("shop.Order"));
    EXPECT_TRUE(r.AcceptsClass("int[]"));
    EXPECT_FALSE(r.AcceptsClass("java.lang.String"));
    SHeapFilterData heap{"shop.Order"};
    EXPECT_TRUE(r.HeapFilter().ShouldNotify(heap));
    SMonitorFilterData monitor{"java.lang.Object"};
    EXPECT_FALSE(r.MonitorFilter().ShouldNotify(monitor));
}

TEST(RuleSetLine, TheFourFiltersShareTheRules) {
    RuleSet r;
    ASSERT_EQ(r.ParseLine("+shop.*"), "");
    SCallGraphFilterData cg{"shop.Cart", "add", "(I)V", MAT_PACKAGE_API};
    EXPECT_TRUE(r.CallGraphFilter().ShouldNotify(cg));
    EXPECT_EQ(r.CallGraphFilter().Group(), EG_CALL_GRAPH);
    SThreadInteractionFilterData ti{"java.lang.Object", "notify", "()V"};
    EXPECT_FALSE(r.ThreadInteractionFilter().ShouldNotify(ti));
    EXPECT_EQ(r.ThreadInteractionFilter().Group(), EG_THREAD_INTERACTION);
    EXPECT_EQ(r.HeapFilter().Group(), EG_HEAP);
    EXPECT_EQ(r.MonitorFilter().Group(), EG_MONITOR);
}

TEST(RuleSetLine, BadRuleSetsNamePositionAndReason) {
    RuleSet r;
    EXPECT_EQ(r.ParseLine("+a.*|b.*"), "filter rule 2 (column 6) \"b.*\": a rule starts with + (include) or - (exclude)");
    EXPECT_EQ(r.ParseLine("+a.*||-b"), "filter rule 2 (column 6) \"\": empty rule (two '|' in a row, or one at an end)");
    EXPECT_EQ(r.ParseLine("+a.*@public"),
              "filter rule 1 (column 1) \"+a.*@public\": unknown access type \"public\" (package_api, package_internal, class_internal)");
    EXPECT_EQ(r.ParseLine("default=include|+a"), "filter rule 1 (column 1) \"default=include\": default= must come last");
    EXPECT_EQ(r.ParseLine("+"), "filter rule 1 (column 1) \"+\": empty pattern");
    EXPECT_EQ(r.ParseLine("+a b"), "filter rule 1 (column 1) \"+a b\": blank in pattern \"a b\"");
    EXPECT_EQ(r.ParseLine("+a.b(I"), "filter rule 1 (column 1) \"+a.b(I\": signature pattern \"(I\" has no ')'");
    EXPECT_EQ(r.ParseLine(""), "filter rule 1 (column 1) \"\": empty rule (two '|' in a row, or one at an end)");
    EXPECT_TRUE(r.Empty());  // a failed parse leaves nothing behind
}

TEST(RuleSetJson, SeparatePatternsAndAccessLists) {
    RuleSet r;
    ASSERT_EQ(r.ParseJson(R"({"default": "exclude", "rules": [
        {"action": "exclude", "class": "com.acme.internal.*"},
        {"action": "include", "class": "com.acme.*", "method": "get?*", "signature": "()*",
         "access": ["package_api", "package_internal"]},
        {"action": "include", "class": "int[]"}]})", "rules.json"),
              "");
    EXPECT_TRUE(Method(r, "com.acme.Shop", "getName", "()Ljava/lang/String;", MAT_PACKAGE_INTERNAL));
    EXPECT_FALSE(Method(r, "com.acme.Shop", "get", "()I"));  // get?* needs one more character
    EXPECT_FALSE(Method(r, "com.acme.Shop", "getName", "()I", MAT_CLASS_INTERNAL));
    EXPECT_FALSE(Method(r, "com.acme.internal.X", "getY", "()I"));
    EXPECT_TRUE(r.AcceptsClass("int[]"));
    EXPECT_FALSE(r.AcceptsClass("com.acme.Shop"));  // the com.acme rule names a method: not for classes
}

TEST(RuleSetJson, BadFilesNameFilePositionAndReason) {
    RuleSet r;
    EXPECT_EQ(r.ParseJson("{\"rules\": [\n  {\"action\": \"include\",}\n]}", "f.json"),
              "f.json:2:24: not valid JSON: syntax error while parsing object key - unexpected '}'; expected string literal");
    EXPECT_EQ(r.ParseJson(R"({"rules": [], "defaults": "include"})", "f.json"),
              "f.json: \"defaults\": unknown field (a rule set has \"rules\" and \"default\")");
    EXPECT_EQ(r.ParseJson(R"({"rules": [{"action": "include", "klass": "a"}]})", "f.json"),
              "f.json: rules[0].klass: unknown field (a rule has action, class, method, signature, access)");
    EXPECT_EQ(r.ParseJson(R"({"rules": [{"class": "a"}]})", "f.json"),
              "f.json: rules[0]: missing \"action\" (\"include\" or \"exclude\")");
    EXPECT_EQ(r.ParseJson(R"({"rules": [{"action": "keep"}]})", "f.json"),
              "f.json: rules[0].action: must be \"include\" or \"exclude\"");
    EXPECT_EQ(r.ParseJson(R"({"rules": [{"action": "include", "class": ""}]})", "f.json"),
              "f.json: rules[0].class: empty pattern");
    EXPECT_EQ(r.ParseJson(R"({"rules": [{"action": "include", "signature": "I)V"}]})", "f.json"),
              "f.json: rules[0].signature: a signature pattern starts with '(' (the runtime's form, e.g. \"(I)V\")");
    EXPECT_EQ(r.ParseJson(R"({"rules": [{"action": "include", "access": ["public"]}]})", "f.json"),
              "f.json: rules[0].access: unknown access type \"public\" (package_api, package_internal, class_internal)");
    EXPECT_EQ(r.ParseJson(R"({"rules": {}})", "f.json"), "f.json: rules: expected an array of rules");
    EXPECT_EQ(r.ParseJson(R"({"rules": [], "default": "maybe"})", "f.json"),
              "f.json: default: must be \"include\" or \"exclude\"");
    EXPECT_TRUE(r.Empty());
}

TEST(RuleSetJson, FilesThroughLoad) {
    const std::string path = ::testing::TempDir() + "/martini-rules.json";
    {
        std::ofstream out(path);
        out << R"({"rules": [{"action": "include", "class": "shop.*"}]})";
    }
    RuleSet r;
    ASSERT_EQ(r.Load("@" + path), "");
    EXPECT_TRUE(r.AcceptsClass("shop.Order"));
    EXPECT_FALSE(r.AcceptsClass("java.lang.Object"));
    std::remove(path.c_str());
    EXPECT_EQ(r.Load("@" + path), "cannot read the filter file '" + path + "': No such file or directory");
}
