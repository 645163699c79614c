//! The imports of a 0.1.x guest: each answers what the latest one answers
//! (the same checks, grants and limits), in 0.1.x terms.

use super::GuestState;
use crate::plugin::wit::latest::mcpw::plugin as new;
use crate::plugin::wit::since_v0_1_1::convert;
use crate::plugin::wit::since_v0_1_1::mcpw::plugin::{
    calls, catalog, embed, lifecycle, log, toolbox, types,
};

type Answer<T> = Result<T, types::PluginError>;

impl types::Host for GuestState {}

impl log::Host for GuestState {
    fn log(&mut self, level: log::Level, message: String) {
        new::log::Host::log(self, level.into(), message)
    }
}

impl catalog::Host for GuestState {
    fn servers(&mut self) -> Answer<Vec<types::ServerStatus>> {
        let servers =
            new::catalog::Host::servers(self).map_err(Into::<types::PluginError>::into)?;
        Ok(servers.into_iter().map(convert::status).collect())
    }

    fn tools(&mut self, server: Option<String>) -> Answer<Vec<types::Tool>> {
        let tools =
            new::catalog::Host::tools(self, server).map_err(Into::<types::PluginError>::into)?;
        Ok(tools.into_iter().filter_map(convert::tool).collect())
    }
}

impl lifecycle::Host for GuestState {
    fn connect(&mut self, server: String) -> Answer<types::ServerStatus> {
        new::lifecycle::Host::connect(self, server)
            .map(convert::status)
            .map_err(Into::into)
    }

    fn refresh(&mut self, server: String) -> Answer<types::ServerStatus> {
        new::lifecycle::Host::refresh(self, server)
            .map(convert::status)
            .map_err(Into::into)
    }
}

impl calls::Host for GuestState {
    fn call_tool(
        &mut self,
        server: String,
        tool: String,
        arguments: String,
    ) -> Answer<calls::CallResult> {
        new::calls::Host::call_tool(self, server, tool, arguments)
            .map(|r| calls::CallResult {
                content: r.content,
                structured_content: r.structured_content,
                is_error: r.is_error,
            })
            .map_err(Into::into)
    }

    fn read_resource(&mut self, server: String, uri: String) -> Answer<String> {
        new::calls::Host::read_resource(self, server, uri).map_err(Into::into)
    }
}

impl embed::Host for GuestState {
    fn model(&mut self) -> Option<embed::ModelInfo> {
        new::embed::Host::model(self).map(|m| embed::ModelInfo {
            id: m.id,
            dimension: m.dimension,
            max_tokens: m.max_tokens,
        })
    }

    fn embed(
        &mut self,
        texts: Vec<String>,
        urgency: embed::Urgency,
    ) -> Result<Vec<Vec<f32>>, embed::EmbedError> {
        new::embed::Host::embed(self, texts, urgency.into()).map_err(Into::into)
    }
}

impl toolbox::Host for GuestState {
    fn start_call(&mut self, name: String, arguments: String) -> wasmtime::Result<Answer<u32>> {
        Ok(new::toolbox::Host::start_call(self, name, arguments)?.map_err(Into::into))
    }

    fn next_finished(&mut self) -> wasmtime::Result<Option<toolbox::Finished>> {
        let finished = new::toolbox::Host::next_finished(self)?;
        Ok(finished.map(|f| toolbox::Finished {
            ticket: f.ticket,
            outcome: f.outcome.map(convert::call_outcome).map_err(Into::into),
        }))
    }

    fn search(&mut self, query: String, limit: u32) -> Answer<Vec<toolbox::ToolInfo>> {
        // Skills are among the latest hits; a 0.1.x script cannot read them.
        let hits = new::toolbox::Host::search(self, query, limit)
            .map_err(Into::<types::PluginError>::into)?;
        Ok(hits.into_iter().filter_map(convert::tool_info).collect())
    }

    fn describe(&mut self, name: String) -> Answer<toolbox::ToolInfo> {
        let info =
            new::toolbox::Host::describe(self, name).map_err(Into::<types::PluginError>::into)?;
        convert::tool_info(info).ok_or_else(|| types::PluginError::NotFound("no such tool".into()))
    }
}
