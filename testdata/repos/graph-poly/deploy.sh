#!/bin/bash
# Deploys the app.
build() {
  echo building
}

deploy() {
  build
  echo deployed
}

deploy
