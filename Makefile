# stockade — top-level build.
#   make            release binaries into build/bin/
#   make test       cmocka unit tests, built with ASan + UBSan
#   make e2e        netns integration tests (root)
#   make fuzz       libFuzzer targets, bounded run (FUZZ_SECONDS each)
#   make lint       cppcheck + clang-tidy + shellcheck
#   make admission  the admission policy's CEL against pod fixtures (e2e/admission.test.sh, no root)
#   make check      everything above, as CI runs it
#   make bench      benchmarks under bench/
#   make images     FROM-scratch image tarballs into build/images/
#   make release    amd64+arm64 OCI layouts, SPDX SBOMs and the packaged charts into build/release/
#                   (SK_SIGNING_KEY=key.pem: signed; TAG=1: and the annotated git tag vVERSION, never pushed)
#   make verify-release SK_VERIFY_KEY=key.pub.pem   check the release's signatures and digests
#   make demo       single-node cluster + helm install + an allowed and a denied call (root)
#   make manifests  render deploy/ from helm/stockade and regenerate the values table
#
# Layout: every directory's *.c is a module; files named *_test.c are cmocka suites, fuzz_*.c are
# libFuzzer targets, main.c is a program entry. Adding a module needs no change here.

CC       ?= gcc
CLANG    ?= clang
BUILD    ?= build
FUZZ_SECONDS ?= 20

PKGS     := libnftnl libmnl libseccomp libcurl yaml-0.1 libcjson openssl libnghttp2
PKG_CONFIG ?= pkg-config
PKG_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null)

# --version prints the release version (the chart's appVersion, the one place it is set) and the commit.
RELEASE  := $(shell sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\} *$$/\1/p' helm/stockade/Chart.yaml)
GITREV   := $(shell git describe --always --dirty 2>/dev/null || echo unknown)
VERSION  := $(RELEASE) ($(GITREV))
WARN     := -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wstrict-prototypes -Wmissing-prototypes -Wvla
BASE_CFLAGS := -std=c11 -D_GNU_SOURCE $(WARN) -I. $(PKG_CFLAGS) -DSK_VERSION='"$(VERSION)"' -DSK_RELEASE='"$(RELEASE)"' -MMD -MP
REL_CFLAGS  := $(BASE_CFLAGS) -O2 -g -fstack-protector-strong -D_FORTIFY_SOURCE=2 -fPIE
REL_LDFLAGS := -pie -Wl,-z,relro,-z,now -Wl,--as-needed
SAN      := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
TEST_CFLAGS := $(BASE_CFLAGS) -O1 -g $(SAN) -DSK_TESTING
FUZZ_CFLAGS := $(BASE_CFLAGS) -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -DSK_FUZZING

# Library modules: every .c except main.c, *_test.c and fuzz_*.c (judged on the file name).
lib_only = $(foreach f,$(1),$(if $(or $(filter %_test.c fuzz_%.c main.c,$(notdir $(f)))),,$(f)))
# Components may keep their rooms in subdirectories (sidecar/proxy/, policy/seccomp/, …): sources are
# found at any depth.
c_under = $(sort $(shell find $(1) -name '*.c' -not -path '*/fuzz/*' 2>/dev/null))
COMMON_SRC  := $(call lib_only,$(call c_under,common))
POLICY_SRC  := $(call lib_only,$(call c_under,policy))
INIT_SRC    := $(call lib_only,$(call c_under,init))
SIDECAR_SRC := $(call lib_only,$(call c_under,sidecar))
INJECTOR_SRC := $(call lib_only,$(call c_under,injector))
CNI_SRC     := $(call lib_only,$(call c_under,cni))
CLI_SRC     := $(filter-out %_test.c,$(call c_under,cli))
CLI_LIB_SRC := $(call lib_only,$(CLI_SRC))
LIB_SRC     := $(COMMON_SRC) $(POLICY_SRC) $(INIT_SRC) $(SIDECAR_SRC) $(INJECTOR_SRC) $(CNI_SRC)

ALL_SRC     := $(call c_under,common policy init sidecar cli injector cni)
TEST_SRC    := $(filter %_test.c,$(ALL_SRC))
FUZZ_SRC    := $(foreach f,$(ALL_SRC),$(if $(filter fuzz_%.c,$(notdir $(f))),$(f)))

rel_obj  = $(patsubst %.c,$(BUILD)/rel/%.o,$(1))
test_obj = $(patsubst %.c,$(BUILD)/test/%.o,$(1))
fuzz_obj = $(patsubst %.c,$(BUILD)/fuzz/%.o,$(1))

BINS := $(BUILD)/bin/stockade-policy $(BUILD)/bin/stockade-init $(BUILD)/bin/stockade-sidecar \
	$(BUILD)/bin/stockade-injector \
	$(BUILD)/bin/stockade-installer $(BUILD)/bin/stockade-cni
# A suite's binary is named by its path (build/test/bin/sidecar/dns/codec_test), so two rooms may both
# have a config_test.c. Fuzz targets are named fuzz_<what>, unique over the tree.
TESTS := $(patsubst %.c,$(BUILD)/test/bin/%,$(TEST_SRC))
FUZZERS := $(patsubst %.c,$(BUILD)/fuzz/bin/%,$(notdir $(FUZZ_SRC)))

.PHONY: all test e2e fuzz lint admission check bench clean manifests images demo release verify-release
all: $(BINS)

$(BUILD)/rel/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(REL_CFLAGS) -c $< -o $@
$(BUILD)/test/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -c $< -o $@
$(BUILD)/fuzz/%.o: %.c
	@mkdir -p $(dir $@)
	$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

# The files that print SK_VERSION are rebuilt when it changes (a commit, the chart's appVersion).
VERSION_USERS := init/main.c cli/main.c sidecar/main.c sidecar/core/metrics.c injector/main.c cni/main.c \
	policy/k8s/inject.c
.PHONY: FORCE
$(BUILD)/version.txt: FORCE
	@mkdir -p $(BUILD) && echo '$(VERSION)' | cmp -s - $@ || echo '$(VERSION)' >$@
$(call rel_obj,$(VERSION_USERS)) $(call test_obj,$(VERSION_USERS)): $(BUILD)/version.txt

# Library modules go into one archive per flavour, so a program or suite pulls only what it uses.
$(BUILD)/rel/libstockade.a: $(call rel_obj,$(LIB_SRC))
	rm -f $@ && ar rcs $@ $^
# The test archive also holds the CLI's modules (not main.c), so cli/*_test.c suites link them.
$(BUILD)/test/libstockade.a: $(call test_obj,$(LIB_SRC) $(CLI_LIB_SRC))
	rm -f $@ && ar rcs $@ $^
$(BUILD)/fuzz/libstockade.a: $(call fuzz_obj,$(LIB_SRC))
	rm -f $@ && ar rcs $@ $^

$(BUILD)/bin/stockade-policy: $(call rel_obj,$(CLI_SRC)) $(BUILD)/rel/libstockade.a
	@mkdir -p $(dir $@)
	$(CC) $(REL_LDFLAGS) -o $@ $^ $(PKG_LIBS)
$(BUILD)/bin/stockade-init: $(call rel_obj,init/main.c) $(BUILD)/rel/libstockade.a
	@mkdir -p $(dir $@)
	$(CC) $(REL_LDFLAGS) -o $@ $^ $(PKG_LIBS)
$(BUILD)/bin/stockade-sidecar: $(call rel_obj,sidecar/main.c) $(BUILD)/rel/libstockade.a
	@mkdir -p $(dir $@)
	$(CC) $(REL_LDFLAGS) -o $@ $^ $(PKG_LIBS)
$(BUILD)/bin/stockade-injector: $(call rel_obj,injector/main.c) $(BUILD)/rel/libstockade.a
	@mkdir -p $(dir $@)
	$(CC) $(REL_LDFLAGS) -o $@ $^ $(PKG_LIBS) -lpthread
# The chained CNI plugin: runs on the node as the runtime's child, one command per process.
$(BUILD)/bin/stockade-cni: $(call rel_obj,cni/main.c) $(BUILD)/rel/libstockade.a
	@mkdir -p $(dir $@)
	$(CC) $(REL_LDFLAGS) -o $@ $^ $(PKG_LIBS) -lpthread
# The seccomp installer's image (helm/stockade-system) is stockade-policy under its own name: an image of
# its own carries the HTTPS-only libcurl that `seccomp-install --from-cluster` dlopens, and the policy image
# (helm test, 4 MiB) stays without it.
$(BUILD)/bin/stockade-installer: $(BUILD)/bin/stockade-policy
	cp $< $@

# The sidecar built as the unit tests are (ASan + UBSan, the test archive): e2e/gateway.test.sh runs it
# for its sanitizer check (a release binary has no sanitizer to report anything).
SAN_SIDECAR := $(BUILD)/san/bin/stockade-sidecar
$(SAN_SIDECAR): $(call test_obj,sidecar/main.c) $(BUILD)/test/libstockade.a
	@mkdir -p $(dir $@)
	$(CC) $(SAN) -o $@ $^ $(PKG_LIBS)

# A unit test links the library archive, so a suite may test any module.
define test_rule
$(BUILD)/test/bin/$(basename $(1)): $(call test_obj,$(1)) $(BUILD)/test/libstockade.a
	@mkdir -p $$(dir $$@)
	$$(CC) $$(SAN) -o $$@ $$^ $$(PKG_LIBS) -lcmocka
endef
$(foreach t,$(TEST_SRC),$(eval $(call test_rule,$(t))))

define fuzz_rule
$(BUILD)/fuzz/bin/$(notdir $(basename $(1))): $(call fuzz_obj,$(1)) $(BUILD)/fuzz/libstockade.a
	@mkdir -p $$(dir $$@)
	$$(CLANG) -fsanitize=fuzzer,address,undefined -o $$@ $$^ $$(PKG_LIBS)
endef
$(foreach f,$(FUZZ_SRC),$(eval $(call fuzz_rule,$(f))))

test: $(TESTS) $(BINS)
	@scripts/run-unit $(TESTS)

e2e: $(BINS) $(SAN_SIDECAR)
	@scripts/run-e2e

fuzz: $(FUZZERS)
	@scripts/run-fuzz $(FUZZ_SECONDS) $(FUZZERS)

lint:
	@scripts/lint

# The admission policy's CEL against its pod fixtures, the charts' and inject's pods (no root, no cluster).
admission:
	@SK_BIN=$(abspath $(BUILD))/bin bash e2e/admission.test.sh

check:
	@scripts/check

bench: $(BINS)
	@scripts/run-bench

# FROM-scratch docker-archive images of the release binaries into $(BUILD)/images/ (no engine needed).
images: $(BINS)
	@BUILD=$(BUILD) scripts/build-images

# Release artifacts (scripts/build-release): multi-arch OCI layouts (arm64 cross-built into $(BUILD)/arm64/),
# an SPDX SBOM per image, the charts packaged with the release version; each SBOM attached to its image and
# each chart pushed as an OCI artifact, everything signed with SK_SIGNING_KEY (scripts/release-oci). TAG=1
# makes the annotated tag v$(RELEASE) on the commit built (refused on a dirty tree or an existing tag).
release: $(BINS)
	+@BUILD=$(BUILD) scripts/build-release
	@scripts/release-oci attach $(if $(SK_SIGNING_KEY),--key "$(SK_SIGNING_KEY)") $(BUILD)/release
	@if [ "$(TAG)" = 1 ]; then scripts/tag-release "$(RELEASE)"; fi

verify-release:
	@[ -n "$(SK_VERIFY_KEY)" ] || { echo "verify-release: SK_VERIFY_KEY=the public key you trust (PEM)" >&2; exit 2; }
	@scripts/release-oci verify --key "$(SK_VERIFY_KEY)" $(BUILD)/release

# A local single-node cluster with stockade around a test agent: an allowed call, a denied one, the audit.
demo:
	@scripts/demo

# deploy/ is the chart rendered with default values; e2e/chart.test.sh fails when it drifts.
manifests:
	@scripts/render-manifests deploy
	@scripts/gen-values-doc

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
