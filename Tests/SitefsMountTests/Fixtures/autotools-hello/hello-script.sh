#!/bin/sh
echo "script ran"
